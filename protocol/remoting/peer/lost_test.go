package peer

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// errInjected is the write error of failConn.
var errInjected = errors.New("injected write failure")

// failConn fails every write once fail is set, and closes failed at the
// first failure; reads go to the real connection.
type failConn struct {
	net.Conn
	fail   atomic.Bool
	once   sync.Once
	failed chan struct{}
}

func (c *failConn) Write(b []byte) (int, error) {
	if c.fail.Load() {
		c.once.Do(func() { close(c.failed) })
		return 0, errInjected
	}
	return c.Conn.Write(b)
}

// writeFailTrigger is the request code whose handler makes the server's
// next write fail (with failConn) and answers with a body large enough to
// be written at once.
const writeFailTrigger = 1

// lostServer accepts one connection and serves it with a Peer whose
// handler records the queue of every oneway UPDATE_CONSUMER_OFFSET.
type lostServer struct {
	ln     net.Listener
	peer   chan *Peer
	fc     *failConn
	mu     sync.Mutex
	got    map[string]bool // queueId of every oneway request handled
	dead   int             // oneway requests handled with a cancelled context
	handle func()          // called by the trigger's handler, when set
}

func startLostServer(t *testing.T, inline bool) *lostServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &lostServer{ln: ln, peer: make(chan *Peer, 1), got: map[string]bool{}}
	h := HandlerFunc(func(ctx context.Context, req *wire.Command) *wire.Command {
		if req.Code == writeFailTrigger {
			if s.handle != nil {
				s.handle() // the write fails for real
			} else {
				s.fc.fail.Store(true)
			}
			resp := wire.NewResponse(req, wire.Success, "")
			resp.Body = make([]byte, corkLimit+1)
			return resp
		}
		if !req.IsOneway() {
			return wire.NewResponse(req, wire.Success, "")
		}
		req.LoadExtFields()
		q := req.ExtFields["queueId"]
		s.mu.Lock()
		s.got[q] = true
		if ctx.Err() != nil {
			s.dead++
		}
		s.mu.Unlock()
		return nil
	})
	go func() {
		nc, err := ln.Accept()
		ln.Close()
		if err != nil {
			return
		}
		s.fc = &failConn{Conn: nc, failed: make(chan struct{})}
		s.peer <- New(s.fc, Options{Handler: h, Inline: inline, DeferExtFields: true})
	}()
	t.Cleanup(func() { ln.Close() })
	return s
}

// offsetCommit returns a oneway UPDATE_CONSUMER_OFFSET frame for queue q
// with a body of pad bytes, so that many of them outgrow the reader's
// buffer.
func offsetCommit(t *testing.T, q, pad int) []byte {
	req := wire.NewRequest(wire.UpdateConsumerOffset, map[string]string{
		"consumerGroup": "g", "topic": "T", "queueId": strconv.Itoa(q), "commitOffset": "1000"})
	req.Flag = wire.FlagOneway
	req.Opaque = int32(q + 100)
	req.Body = make([]byte, pad)
	b, err := req.AppendTo(nil, wire.JSON)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func frame(t *testing.T, cmd *wire.Command) []byte {
	b, err := cmd.AppendTo(nil, wire.JSON)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRequestsSentBeforeTheConnectionDies checks that every request the
// other end sent is handled when the connection dies right after: the
// client closes or resets it, and in some cases writing to the client has
// failed before the requests were read. Oneway handlers get a live
// context even once the connection is gone.
func TestRequestsSentBeforeTheConnectionDies(t *testing.T) {
	// Of 512 bytes each: most of the reader's buffer, within the
	// socket's, so that all of them reach the server before a reset.
	const n = 100
	cases := []struct {
		name string
		// failFirst: the server's write fails (injected) before the
		// oneway requests are sent.
		failFirst bool
		// twoWay: a request the server answers (after the client went
		// away, so that the answer's write fails for real) precedes the
		// oneway requests.
		twoWay bool
		reset  bool
	}{
		{name: "close"},
		{name: "reset", reset: true},
		{name: "write-failed/close", failFirst: true},
		{name: "write-failed/reset", failFirst: true, reset: true},
		{name: "answer-after-reset", twoWay: true, reset: true},
	}
	for _, inline := range []bool{true, false} {
		for _, tc := range cases {
			t.Run(tc.name+"/inline="+strconv.FormatBool(inline), func(t *testing.T) {
				gone := make(chan struct{})
				s := startLostServer(t, inline)
				if tc.twoWay {
					// The answer is written once the client has reset
					// the connection.
					s.handle = func() { <-gone }
				}
				cc, err := net.Dial("tcp", s.ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer cc.Close()
				var p *Peer
				select {
				case p = <-s.peer:
				case <-time.After(5 * time.Second):
					t.Fatal("not accepted")
				}
				defer p.Close()

				if tc.failFirst {
					if _, err := cc.Write(frame(t, wire.NewRequest(writeFailTrigger, nil))); err != nil {
						t.Fatal(err)
					}
					select {
					case <-s.fc.failed:
					case <-time.After(5 * time.Second):
						t.Fatal("the server's write did not fail")
					}
				}
				var out []byte
				if tc.twoWay {
					out = append(out, frame(t, wire.NewRequest(wire.HeartBeat, nil))...)
					trigger := wire.NewRequest(writeFailTrigger, nil)
					trigger.Opaque = 7
					out = append(out, frame(t, trigger)...)
				}
				for q := range n {
					out = append(out, offsetCommit(t, q, 512)...)
				}
				if _, err := cc.Write(out); err != nil {
					t.Fatal(err)
				}
				if tc.reset {
					waitSent(t, cc.(*net.TCPConn))
					cc.(*net.TCPConn).SetLinger(0)
				}
				cc.Close()
				close(gone)

				select {
				case <-p.Done():
				case <-time.After(10 * time.Second):
					t.Fatal("the server did not notice the end of the connection")
				}
				p.Close() // waits for the handlers
				if !errors.Is(p.Err(), ErrConnectionLost) {
					t.Fatalf("Err = %v, want ErrConnectionLost", p.Err())
				}
				if tc.failFirst && !errors.Is(p.Err(), errInjected) {
					t.Fatalf("Err = %v, want the write failure", p.Err())
				}
				s.mu.Lock()
				defer s.mu.Unlock()
				if len(s.got) != n {
					var missing []int
					for q := range n {
						if !s.got[strconv.Itoa(q)] {
							missing = append(missing, q)
						}
					}
					t.Fatalf("handled %d of %d oneway requests; missing %v (Err %v)", len(s.got), n, missing, p.Err())
				}
				if s.dead != 0 {
					t.Fatalf("%d oneway requests were handled with a cancelled context", s.dead)
				}
			})
		}
	}
}

// TestSendAfterWriteFailure checks that once a write has failed, calls
// fail at once rather than waiting for an answer that cannot come.
func TestSendAfterWriteFailure(t *testing.T) {
	s := startLostServer(t, true)
	cc, err := net.Dial("tcp", s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	p := <-s.peer
	defer p.Close()
	if _, err := cc.Write(frame(t, wire.NewRequest(writeFailTrigger, nil))); err != nil {
		t.Fatal(err)
	}
	<-s.fc.failed
	ctx := ctxTimeout(t, 5*time.Second)
	if _, err := p.Invoke(ctx, wire.NewRequest(wire.HeartBeat, nil)); !errors.Is(err, ErrConnectionLost) || !errors.Is(err, errInjected) {
		t.Fatalf("Invoke: %v", err)
	}
	if err := p.InvokeOneway(ctx, wire.NewRequest(wire.HeartBeat, nil)); !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("InvokeOneway: %v", err)
	}
	if err := p.InvokeAsync(ctx, wire.NewRequest(wire.HeartBeat, nil), func(*wire.Command, error) {}); !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("InvokeAsync: %v", err)
	}
	select {
	case <-p.Done():
		t.Fatal("a failed write shut the connection down while the other end still has it open")
	default:
	}
}

// TestFrameTooLargeAnswered: a request whose frame exceeds the limit is
// answered MESSAGE_ILLEGAL, saying why, and then the connection is
// closed; the sender reads the answer rather than meeting a reset.
func TestFrameTooLargeAnswered(t *testing.T) {
	const limit = 1 << 20
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan *Peer, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		served <- New(nc, Options{MaxFrameSize: limit, Inline: true, Handler: HandlerFunc(func(ctx context.Context, req *wire.Command) *wire.Command {
			return wire.NewResponse(req, wire.Success, "")
		})})
	}()
	c, err := Dial(context.Background(), ln.Addr().String(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := <-served
	defer s.Close()

	ctx := ctxTimeout(t, 10*time.Second)
	if resp, err := c.Invoke(ctx, wire.NewRequest(wire.HeartBeat, nil)); err != nil || resp.ResponseCode() != wire.Success {
		t.Fatalf("small request: %v %v", resp, err)
	}
	req := wire.NewRequest(wire.SendMessage, map[string]string{"topic": "T"})
	req.Body = make([]byte, 2*limit)
	resp, err := c.Invoke(ctx, req)
	if err != nil {
		t.Fatalf("oversized request: %v, want an answer", err)
	}
	if resp.ResponseCode() != wire.MessageIllegal || !strings.Contains(resp.Remark, "exceeds the limit") {
		t.Fatalf("oversized request: %s %q", resp.ResponseCode(), resp.Remark)
	}
	t.Logf("answer: %s %q", resp.ResponseCode(), resp.Remark)
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the connection stayed open")
	}
	if !errors.Is(c.Err(), io.EOF) {
		t.Fatalf("the client saw %v, want the end of the stream", c.Err())
	}
}
