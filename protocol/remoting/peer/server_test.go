package peer

import (
	"bufio"
	"net"
	"sync"
	"testing"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// testServer is a minimal remoting server for tests: it answers each
// request through respond (on its own goroutine) and can push requests to
// the client. It stands in for the real server, which lives elsewhere.
type testServer struct {
	t       *testing.T
	ln      net.Listener
	respond func(s *testConn, req *wire.Command)

	mu    sync.Mutex
	conns []*testConn
	wg    sync.WaitGroup
	// got receives every request the server reads, when not nil.
	got chan *wire.Command
	// responses receives responses the client sends to server requests.
	responses chan *wire.Command
}

type testConn struct {
	net.Conn
	typ     wire.SerializeType
	mu      sync.Mutex
	w       *bufio.Writer
	pending chan []byte
}

// echo answers SUCCESS with the request's extFields and body.
func echo(s *testConn, req *wire.Command) {
	resp := wire.NewResponse(req, wire.Success, "")
	resp.ExtFields = req.ExtFields
	resp.Body = req.Body
	s.send(resp)
}

func startServer(t *testing.T, respond func(s *testConn, req *wire.Command)) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{t: t, ln: ln, respond: respond, responses: make(chan *wire.Command, 16)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			tc := &testConn{Conn: conn, w: bufio.NewWriterSize(conn, 64<<10), pending: make(chan []byte, 4096)}
			s.mu.Lock()
			s.conns = append(s.conns, tc)
			s.mu.Unlock()
			s.wg.Add(2)
			go func() { defer s.wg.Done(); tc.writeLoop() }()
			go func() { defer s.wg.Done(); s.serve(tc) }()
		}
	}()
	t.Cleanup(s.stop)
	return s
}

func (s *testServer) addr() string { return s.ln.Addr().String() }

func (s *testServer) stop() {
	s.ln.Close()
	s.closeConns()
	s.wg.Wait()
}

func (s *testServer) closeConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
}

func (s *testServer) conn(i int) *testConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns[i]
}

func (s *testServer) serve(c *testConn) {
	defer close(c.pending)
	r := wire.NewReader(c, wire.DecodeOptions{StrictExtFields: true})
	var handlers sync.WaitGroup
	defer handlers.Wait()
	for {
		cmd, err := r.ReadCommand()
		if err != nil {
			return
		}
		if cmd.IsResponse() {
			s.responses <- cmd
			continue
		}
		if s.got != nil {
			s.got <- cmd
		}
		if s.respond != nil && !cmd.IsOneway() {
			handlers.Add(1)
			go func() { defer handlers.Done(); s.respond(c, cmd) }()
		}
	}
}

// send encodes a command and queues it for the connection's writer.
func (c *testConn) send(cmd *wire.Command) {
	b, err := cmd.AppendTo(nil, c.typ)
	if err != nil {
		panic(err)
	}
	c.sendRaw(b)
}

func (c *testConn) sendRaw(b []byte) {
	defer func() { _ = recover() }() // the connection may have closed
	c.pending <- b
}

func (c *testConn) writeLoop() {
	for b := range c.pending {
		c.w.Write(b)
		for more := true; more; {
			select {
			case b, ok := <-c.pending:
				if !ok {
					c.w.Flush()
					return
				}
				c.w.Write(b)
			default:
				more = false
			}
		}
		if c.w.Flush() != nil {
			for range c.pending {
			}
			return
		}
	}
}
