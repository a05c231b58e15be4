package bench

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"testing"
)

// BenchmarkLoopbackFloorEpoll is the sync16 floor with the server's
// connections served by loops of its own over epoll instead of a
// goroutine each: level-triggered, so no read comes back empty. It shows
// how much of the floor is Go's network poller.
func BenchmarkLoopbackFloorEpoll(b *testing.B) {
	for _, loops := range []int{1, 2} {
		b.Run(map[int]string{1: "sync16/loops1", 2: "sync16/loops2"}[loops], func(b *testing.B) {
			floorSync(b, epollFloorServer(b, loops), 16)
		})
	}
}

// epollFloor is one event loop: the connections it serves and their
// unread bytes.
type epollFloor struct {
	fd    int
	stop  [2]int // a pipe: a byte written to stop[1] ends the loop
	mu    sync.Mutex
	conns map[int32]*epollConn
}

type epollConn struct {
	fd   int
	have int
	buf  []byte
}

// epollFloorServer listens on loopback and spreads the connections over
// loops event loops, each answering like serveFloor.
func epollFloorServer(b *testing.B, loops int) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	fs := make([]*epollFloor, loops)
	for i := range fs {
		fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			b.Fatal(err)
		}
		f := &epollFloor{fd: fd, conns: map[int32]*epollConn{}}
		if err := syscall.Pipe2(f.stop[:], syscall.O_CLOEXEC); err != nil {
			b.Fatal(err)
		}
		if err := syscall.EpollCtl(fd, syscall.EPOLL_CTL_ADD, f.stop[0], &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(f.stop[0])}); err != nil {
			b.Fatal(err)
		}
		fs[i] = f
		wg.Go(f.run)
	}
	b.Cleanup(func() {
		ln.Close()
		for _, f := range fs {
			syscall.Write(f.stop[1], []byte{0})
		}
		wg.Wait()
		for _, f := range fs {
			for fd := range f.conns {
				syscall.Close(int(fd))
			}
			syscall.Close(f.stop[0])
			syscall.Close(f.stop[1])
			syscall.Close(f.fd)
		}
	})
	go func() {
		for i := 0; ; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if err := fs[i%loops].add(c.(*net.TCPConn)); err != nil {
				c.Close()
			}
		}
	}()
	return ln.Addr().String()
}

// add takes c's descriptor over from the network poller.
func (f *epollFloor) add(c *net.TCPConn) error {
	file, err := c.File() // a duplicate, so c can be closed
	c.Close()
	if err != nil {
		return err
	}
	fd, err := syscall.Dup(int(file.Fd()))
	file.Close()
	if err != nil {
		return err
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return err
	}
	f.mu.Lock()
	f.conns[int32(fd)] = &epollConn{fd: fd, buf: make([]byte, 64<<10)}
	f.mu.Unlock()
	return syscall.EpollCtl(f.fd, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)})
}

// run answers the requests of every ready connection until a byte
// arrives on the stop pipe.
func (f *epollFloor) run() {
	events := make([]syscall.EpollEvent, 64)
	answer := make([]byte, floorAnswer)
	out := make([]byte, 0, 64<<10)
	for {
		n, err := syscall.EpollWait(f.fd, events, -1)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		for _, ev := range events[:n] {
			if int(ev.Fd) == f.stop[0] {
				return
			}
			f.mu.Lock()
			c := f.conns[ev.Fd]
			f.mu.Unlock()
			if c == nil {
				continue
			}
			m, err := syscall.Read(c.fd, c.buf[c.have:])
			if m <= 0 || err != nil {
				if !errors.Is(err, syscall.EAGAIN) {
					syscall.EpollCtl(f.fd, syscall.EPOLL_CTL_DEL, c.fd, nil)
				}
				continue
			}
			c.have += m
			k := c.have / floorRequest
			out = out[:0]
			for range k {
				out = append(out, answer...)
			}
			copy(c.buf, c.buf[k*floorRequest:c.have])
			c.have -= k * floorRequest
			if k > 0 {
				syscall.Write(c.fd, out)
			}
		}
	}
}
