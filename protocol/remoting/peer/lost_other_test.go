//go:build !linux

package peer

import (
	"net"
	"testing"
)

// waitSent cannot see the socket's send queue here; loopback writes that
// fit the socket buffers are delivered at once.
func waitSent(t *testing.T, c *net.TCPConn) {}
