//go:build linux

package peer

import (
	"net"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// waitSent waits until the kernel has nothing left to send on c: every
// byte written reached the other end's socket. A reset drops what is
// still unsent, which would lose requests before any server sees them.
func waitSent(t *testing.T, c *net.TCPConn) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var n int32
		var errno syscall.Errno
		if err := rc.Control(func(fd uintptr) {
			_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&n)))
		}); err != nil {
			t.Fatal(err)
		}
		if errno != 0 {
			t.Fatalf("SIOCOUTQ: %v", errno)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still unsent", n)
		}
		time.Sleep(time.Millisecond)
	}
}
