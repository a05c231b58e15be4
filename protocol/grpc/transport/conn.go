package transport

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/peer"
)

// maxWindow is the largest flow-control window HTTP/2 allows.
const maxWindow = 1<<31 - 1

// readBufferSize is the size of a connection's read buffer.
const readBufferSize = 32 << 10

// conn is one client connection: its reader runs in serve, its writer in
// writeLoop.
type conn struct {
	srv  *Server
	raw  net.Conn // the accepted connection
	nc   net.Conn // raw, or the TLS connection over it; set before the writer starts
	opts *Options

	writerStarted atomic.Bool
	closing       atomic.Bool // close was called
	writeDeadline time.Time   // of the socket; the goroutine writing alone uses it

	// ctx carries the peer and ends when the connection closes; every
	// call's context derives from it.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	streams   map[uint32]*stream
	lastID    uint32 // highest stream id a client opened
	goingAway bool   // GOAWAY sent: no new calls
	closed    bool

	wmu          sync.Mutex
	wbuf, spare  []byte // queued bytes; the writer swaps them
	henc         *hpack.Encoder
	hbuf         bytes.Buffer
	sendWin      int64 // what the client lets the server send on the connection
	peerInitWin  int64 // the client's SETTINGS_INITIAL_WINDOW_SIZE
	peerMaxFrame int
	wclosed      bool
	writing      bool       // a goroutine is writing what it took from wbuf
	winCond      *sync.Cond // on wmu: windows grew, a stream ended, or wclosed
	kick         chan struct{}
	writerDone   chan struct{}
	ctrlQueued   int // control frames queued by the reader since the writer last took the buffer
	// resets marks the streams the server reset among the last
	// resetWindow the client opened: frames the client sent them before
	// it saw the reset are ignored (RFC 9113, section 5.1).
	resets [resetWindow / 64]uint64

	// calls holds a token for each call whose handler runs on a worker,
	// from its start to its return, whether or not its stream is still
	// open: a client that resets its calls at once cannot have more
	// handlers running than MaxConcurrentStreams.
	calls chan struct{}

	// testHookEmptyTake, when set, runs in the writer goroutine while it
	// holds the write with nothing taken.
	testHookEmptyTake func()

	// held counts the bytes of received messages the connection's streams
	// hold (recvBudget); starved is set while it waits for the budget.
	held    atomic.Int64
	starved atomic.Bool

	fmu         sync.Mutex
	recvWin     int64 // what the client may still send on the connection
	recvUnacked int64 // received since the last connection WINDOW_UPDATE

	// Used by the reader only.
	br         *bufio.Reader
	fr         *http2.Framer
	hblock     *headerBlock
	calmTokens float64   // what the client may still do without effect (calm)
	calmAt     time.Time // when calmTokens was last refilled
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		srv:          s,
		raw:          nc,
		nc:           nc,
		opts:         &s.opts,
		streams:      make(map[uint32]*stream),
		sendWin:      minWindowSize,
		peerInitWin:  minWindowSize,
		peerMaxFrame: 16384,
		kick:         make(chan struct{}, 1),
		writerDone:   make(chan struct{}),
		recvWin:      int64(s.opts.ConnWindowSize),
		calls:        make(chan struct{}, s.opts.MaxConcurrentStreams),
		calmTokens:   calmBurst,
	}
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: nc.RemoteAddr(), LocalAddr: nc.LocalAddr()})
	c.ctx, c.cancel = context.WithCancel(ctx)
	c.henc = hpack.NewEncoder(&c.hbuf)
	c.winCond = sync.NewCond(&c.wmu)
	c.hblock = newHeaderBlock(s.opts.MaxHeaderListSize)
	return c
}

// serve runs the connection until it closes.
func (c *conn) serve() {
	if err := c.negotiate(); err != nil {
		c.opts.Logger.Debug("grpc connection refused", "remote", c.raw.RemoteAddr().String(), "err", err)
		c.close()
		c.raw.Close()
		c.srv.connEnded(c)
		return
	}
	c.writerStarted.Store(true)
	go c.writeLoop()
	if err := c.handshake(); err != nil {
		c.end(err)
		return
	}
	c.read()
}

// tlsRecordHandshake is the first byte of a TLS client hello.
const tlsRecordHandshake = 0x16

// negotiate serves the connection over TLS when the client opens with a
// TLS handshake and Options.TLSConfig is set (the HTTP/2 preface opens
// with 'P', so one byte tells them apart), and sets up the reader.
func (c *conn) negotiate() error {
	c.raw.SetReadDeadline(time.Now().Add(c.opts.HandshakeTimeout))
	br := bufio.NewReaderSize(c.raw, readBufferSize)
	if c.opts.TLSConfig != nil {
		first, err := br.Peek(1)
		if err != nil {
			return fmt.Errorf("reading the first byte: %w", err)
		}
		if first[0] == tlsRecordHandshake {
			tc := tls.Server(bufferedConn{Conn: c.raw, r: br}, c.opts.TLSConfig)
			ctx, cancel := context.WithTimeout(c.ctx, c.opts.HandshakeTimeout)
			err := tc.HandshakeContext(ctx)
			cancel()
			if err != nil {
				return fmt.Errorf("TLS handshake: %w", err)
			}
			if p := tc.ConnectionState().NegotiatedProtocol; p != "" && p != "h2" {
				return fmt.Errorf("TLS client negotiated %q, not h2", p)
			}
			c.nc = tc
			br = bufio.NewReaderSize(tc, readBufferSize)
		}
	}
	c.br = br
	c.fr = http2.NewFramer(nil, br)
	c.fr.SetReuseFrames()
	c.fr.SetMaxReadFrameSize(16384)
	return nil
}

// bufferedConn is a connection whose first bytes were read ahead into r.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// read reads the connection until it ends, unless a call running on this
// goroutine detaches it (Detach): another goroutine then reads on.
func (c *conn) read() {
	if err := c.readLoop(); err != errDetached {
		c.end(err)
	}
}

// errDetached ends the read loop of a goroutine whose inline call was
// detached: another goroutine reads the connection now.
var errDetached = errors.New("transport: reading continues on another goroutine")

// end closes the connection after its reader stopped with err.
func (c *conn) end(err error) {
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		c.opts.Logger.Debug("grpc connection closed", "remote", c.nc.RemoteAddr().String(), "err", err)
	}
	c.close()
	c.kickWriter() // close kicks only the first time; the writer may have skipped that kick while the reader wrote
	<-c.writerDone
	c.nc.Close()
	c.mu.Lock()
	streams := c.streams
	c.streams = make(map[uint32]*stream)
	c.mu.Unlock()
	for _, st := range streams {
		st.releaseHeld()
	}
	c.forgetStarved()
	c.srv.connEnded(c)
}

// handshake reads the client's preface and queues the server's SETTINGS
// and the connection window.
func (c *conn) handshake() error {
	c.nc.SetReadDeadline(time.Now().Add(c.opts.HandshakeTimeout))
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c.br, preface); err != nil {
		return fmt.Errorf("reading the HTTP/2 preface: %w", err)
	}
	if string(preface) != http2.ClientPreface {
		return errors.New("not an HTTP/2 client preface (gRPC needs HTTP/2 with prior knowledge)")
	}
	c.nc.SetReadDeadline(time.Time{})
	c.queue(func(b []byte) []byte {
		b = appendSettings(b,
			http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: c.opts.MaxConcurrentStreams},
			http2.Setting{ID: http2.SettingInitialWindowSize, Val: uint32(c.opts.WindowSize)},
			http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: c.opts.MaxHeaderListSize},
		)
		if extra := c.opts.ConnWindowSize - minWindowSize; extra > 0 {
			b = appendWindowUpdate(b, 0, uint32(extra))
		}
		return b
	})
	return nil
}

// readLoop reads and handles frames until the connection fails or ends.
func (c *conn) readLoop() error {
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				c.resetStream(se.StreamID, se.Code)
				continue
			}
			var ce http2.ConnectionError
			if errors.As(err, &ce) {
				return c.connError(http2.ErrCode(ce), err.Error())
			}
			if errors.Is(err, http2.ErrFrameTooLarge) {
				return c.connError(http2.ErrCodeFrameSize, err.Error())
			}
			return err
		}
		if err := c.handleFrame(f); err != nil {
			return err
		}
		if c.br.Buffered() == 0 {
			c.flushFromReader() // before the reader blocks for more
		}
	}
}

// connError tells the client why the connection ends (GOAWAY) and
// returns the error that ends it.
func (c *conn) connError(code http2.ErrCode, why string) error {
	c.mu.Lock()
	last := c.lastID
	c.mu.Unlock()
	c.queue(func(b []byte) []byte { return appendGoAway(b, last, code, why) })
	return fmt.Errorf("connection error %v: %s", code, why)
}

func (c *conn) handleFrame(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.HeadersFrame, *http2.ContinuationFrame:
		return c.onHeaders(f)
	case *http2.DataFrame:
		return c.onData(f)
	case *http2.SettingsFrame:
		return c.onSettings(f)
	case *http2.WindowUpdateFrame:
		return c.onWindowUpdate(f)
	case *http2.PingFrame:
		if !f.IsAck() {
			if !c.calm(1) {
				return c.connError(http2.ErrCodeEnhanceYourCalm, "too many pings")
			}
			data := f.Data
			return c.queueControl(func(b []byte) []byte { return appendPingAck(b, data) })
		}
	case *http2.RSTStreamFrame:
		if c.idle(f.StreamID) {
			return c.connError(http2.ErrCodeProtocol, fmt.Sprintf("RST_STREAM on stream %d, never opened", f.StreamID))
		}
		if st := c.removeStream(f.StreamID); st != nil {
			st.abort(errResetByClient(f.ErrCode))
			if !c.calm(1) {
				return c.connError(http2.ErrCodeEnhanceYourCalm, "too many streams reset")
			}
		}
	case *http2.GoAwayFrame:
		// The client opens no new call; those open run to their end.
	case *http2.PushPromiseFrame:
		return c.connError(http2.ErrCodeProtocol, "clients must not push")
	case *http2.PriorityFrame:
		if f.StreamDep == f.StreamID {
			c.resetStream(f.StreamID, http2.ErrCodeProtocol)
		}
	}
	// Priorities and unknown frame types are ignored, as RFC 9113 asks.
	return nil
}

// idle reports whether stream id was never opened by the client.
func (c *conn) idle(id uint32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return id > c.lastID
}

// Limits on what a client may do that costs the server work and does not
// move a call forward: a PING or SETTINGS to answer, a call reset or
// refused, a frame on a closed stream. A client has calmBurst such
// actions, and gains calmRate a second up to calmBurst again; beyond
// that its connection ends with ENHANCE_YOUR_CALM. Clients send a few
// pings a minute and reset the calls they give up on, far below this.
const (
	calmBurst = 2000
	calmRate  = 1000
)

// calm spends n of the client's allowance of actions without effect and
// reports whether it had enough. The reader alone calls it.
func (c *conn) calm(n float64) bool {
	now := time.Now()
	if !c.calmAt.IsZero() {
		c.calmTokens = min(calmBurst, c.calmTokens+now.Sub(c.calmAt).Seconds()*calmRate)
	}
	c.calmAt = now
	c.calmTokens -= n
	return c.calmTokens >= 0
}

// maxQueuedControl bounds the control frames (PING and SETTINGS
// acknowledgements, RST_STREAM) the reader queues for a client that does
// not read them: beyond it the connection ends with ENHANCE_YOUR_CALM.
const maxQueuedControl = 1024

// queueControl queues a control frame that answers one from the client,
// ending the connection when the client leaves too many unread.
func (c *conn) queueControl(appendFn func([]byte) []byte) error {
	c.wmu.Lock()
	if c.wclosed {
		c.wmu.Unlock()
		return nil
	}
	c.ctrlQueued++
	over := c.ctrlQueued > maxQueuedControl
	if !over {
		c.wbuf = appendFn(c.wbuf)
	}
	c.wmu.Unlock()
	if over {
		return c.connError(http2.ErrCodeEnhanceYourCalm, "the client does not read what it asks for")
	}
	c.kickWriter()
	return nil
}

// onSettings applies the client's SETTINGS and acknowledges them.
func (c *conn) onSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		return nil
	}
	if !c.calm(1) {
		return c.connError(http2.ErrCodeEnhanceYourCalm, "too many SETTINGS")
	}
	if err := f.ForeachSetting(func(s http2.Setting) error { return s.Valid() }); err != nil {
		var ce http2.ConnectionError
		if errors.As(err, &ce) {
			return c.connError(http2.ErrCode(ce), fmt.Sprintf("bad setting: %v", err))
		}
		return c.connError(http2.ErrCodeProtocol, fmt.Sprintf("bad setting: %v", err))
	}
	var connErr error
	c.mu.Lock()
	c.wmu.Lock()
	f.ForeachSetting(func(s http2.Setting) error {
		switch s.ID {
		case http2.SettingInitialWindowSize:
			delta := int64(s.Val) - c.peerInitWin
			c.peerInitWin = int64(s.Val)
			for _, st := range c.streams {
				st.sendWin += delta
				if st.sendWin > maxWindow {
					connErr = errors.New("a stream's window overflows")
				}
			}
		case http2.SettingMaxFrameSize:
			c.peerMaxFrame = int(s.Val)
		case http2.SettingHeaderTableSize:
			c.henc.SetMaxDynamicTableSizeLimit(s.Val)
		}
		return nil
	})
	c.winCond.Broadcast()
	c.wmu.Unlock()
	c.mu.Unlock()
	if connErr != nil {
		return c.connError(http2.ErrCodeFlowControl, connErr.Error())
	}
	return c.queueControl(appendSettingsAck)
}

// onWindowUpdate grows a send window.
func (c *conn) onWindowUpdate(f *http2.WindowUpdateFrame) error {
	if f.StreamID == 0 {
		c.wmu.Lock()
		c.sendWin += int64(f.Increment)
		over := c.sendWin > maxWindow
		c.winCond.Broadcast()
		c.wmu.Unlock()
		if over {
			return c.connError(http2.ErrCodeFlowControl, "connection window overflows")
		}
		return nil
	}
	c.mu.Lock()
	st := c.streams[f.StreamID]
	idle := f.StreamID > c.lastID
	c.mu.Unlock()
	if st == nil {
		if idle {
			return c.connError(http2.ErrCodeProtocol, fmt.Sprintf("WINDOW_UPDATE on stream %d, never opened", f.StreamID))
		}
		return nil // a stream that ended; updates may still be on the way
	}
	c.wmu.Lock()
	st.sendWin += int64(f.Increment)
	over := st.sendWin > maxWindow
	c.winCond.Broadcast()
	c.wmu.Unlock()
	if over {
		c.resetStream(f.StreamID, http2.ErrCodeFlowControl)
	}
	return nil
}

// onData credits the connection window and hands the data to its stream.
func (c *conn) onData(f *http2.DataFrame) error {
	n := int64(f.Header().Length)
	if err := c.takeData(n); err != nil {
		return err
	}
	c.mu.Lock()
	st := c.streams[f.StreamID]
	idle := f.StreamID > c.lastID
	c.mu.Unlock()
	if st == nil {
		if idle {
			return c.connError(http2.ErrCodeProtocol, "data on a stream never opened")
		}
		if c.resetByServer(f.StreamID) {
			return nil // sent before the client saw the reset: dropped
		}
		// The client ended or reset the stream itself (RFC 9113, section 5.1).
		if !c.calm(1) {
			return c.connError(http2.ErrCodeEnhanceYourCalm, "too much data on closed streams")
		}
		return c.queueControl(func(b []byte) []byte { return appendRSTStream(b, f.StreamID, http2.ErrCodeStreamClosed) })
	}
	return st.onData(f.Data(), n, f.StreamEnded())
}

// resetStream ends a stream with RST_STREAM.
func (c *conn) resetStream(id uint32, code http2.ErrCode) {
	if st := c.removeStream(id); st != nil {
		st.abort(fmt.Errorf("stream reset by the server: %v", code))
	}
	c.queueReset(id, code)
}

// queueReset queues a RST_STREAM.
func (c *conn) queueReset(id uint32, code http2.ErrCode) {
	c.wmu.Lock()
	if !c.wclosed {
		c.appendResetLocked(id, code)
	}
	c.wmu.Unlock()
	c.kickWriter()
}

// resetWindow is how many of the streams a client opened last the
// server remembers whether it reset. Frames on an older closed stream
// are ignored, as RFC 9113 allows for streams the server reset.
const resetWindow = 4096

// appendResetLocked queues a RST_STREAM and remembers the stream as reset
// by the server. c.wmu is held.
func (c *conn) appendResetLocked(id uint32, code http2.ErrCode) {
	c.wbuf = appendRSTStream(c.wbuf, id, code)
	i := id >> 1 % resetWindow
	c.resets[i/64] |= 1 << (i % 64)
}

// resetByServer reports whether frames on closed stream id are to be
// ignored: the server reset it, or it is too old to tell.
func (c *conn) resetByServer(id uint32) bool {
	c.mu.Lock()
	old := c.lastID-id >= 2*resetWindow
	c.mu.Unlock()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	i := id >> 1 % resetWindow
	return old || c.resets[i/64]&(1<<(i%64)) != 0
}

// opened forgets the resets remembered for the slots that the streams
// after prev up to id take over. c.mu is held.
func (c *conn) opened(prev, id uint32) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if id-prev >= 2*resetWindow {
		clear(c.resets[:])
		return
	}
	for s := prev + 1; s <= id; s++ {
		if s%2 == 1 {
			i := s >> 1 % resetWindow
			c.resets[i/64] &^= 1 << (i % 64)
		}
	}
}

// runCall runs a call's handler on a worker once fewer than
// MaxConcurrentStreams handlers of the connection run. The stream table
// bounds the calls open, so only a client whose reset calls' handlers
// still run has to wait; the reader waits for them, and if none ends
// within handlerWait, the connection ends with ENHANCE_YOUR_CALM.
func (c *conn) runCall(f func()) error {
	select {
	case c.calls <- struct{}{}:
	default:
		t := time.NewTimer(handlerWait)
		defer t.Stop()
		select {
		case c.calls <- struct{}{}:
		case <-c.ctx.Done():
			return nil
		case <-t.C:
			return c.connError(http2.ErrCodeEnhanceYourCalm, "the handlers of too many reset calls still run")
		}
	}
	c.srv.run(func() {
		defer func() { <-c.calls }()
		f()
	})
	return nil
}

// handlerWait is how long a new call waits for the handlers of reset
// calls to end (runCall).
const handlerWait = time.Second

// removeStream takes a stream out of the table, closing the connection
// if it was the last one after GOAWAY.
func (c *conn) removeStream(id uint32) *stream {
	c.mu.Lock()
	st := c.streams[id]
	delete(c.streams, id)
	drained := c.goingAway && len(c.streams) == 0
	c.mu.Unlock()
	if drained {
		c.close()
	}
	return st
}

// goAway stops new calls and closes the connection once the open ones end.
func (c *conn) goAway() {
	c.mu.Lock()
	if c.goingAway {
		c.mu.Unlock()
		return
	}
	c.goingAway = true
	last := c.lastID
	drained := len(c.streams) == 0
	c.mu.Unlock()
	c.queue(func(b []byte) []byte { return appendGoAway(b, last, http2.ErrCodeNo, "server shutting down") })
	if drained {
		c.close()
	}
}

// close ends the connection: calls see their context end, senders wake,
// and the writer sends what is queued, then closes the socket.
func (c *conn) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	c.closing.Store(true)
	c.cancel()
	if !c.writerStarted.Load() {
		c.raw.Close() // still negotiating: nothing to send
	}
	c.raw.SetWriteDeadline(time.Now().Add(closeWriteTimeout))
	c.wmu.Lock()
	c.wclosed = true
	c.winCond.Broadcast()
	c.wmu.Unlock()
	c.kickWriter()
}

// queue appends frames to the write buffer and wakes the writer; it
// does nothing once the connection is closed.
func (c *conn) queue(appendFn func([]byte) []byte) {
	c.wmu.Lock()
	if c.wclosed {
		c.wmu.Unlock()
		return
	}
	c.wbuf = appendFn(c.wbuf)
	c.wmu.Unlock()
	c.kickWriter()
}

func (c *conn) kickWriter() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// closeWriteTimeout bounds the last write of a closing connection.
const closeWriteTimeout = time.Second

// writeLoop writes what is queued, everything queued since the last
// write in one system call, until the connection closes. The reader
// writes too, when it has nothing more to read (flushFromReader); one
// goroutine writes at a time.
func (c *conn) writeLoop() {
	defer close(c.writerDone)
	for range c.kick {
		for {
			buf, closing, ok := c.takeWrite()
			if !ok {
				break // the reader is writing and kicks when done
			}
			if len(buf) == 0 {
				if h := c.testHookEmptyTake; h != nil {
					h()
				}
				more := c.doneWrite(buf)
				if closing {
					c.nc.Close() // wakes the reader
					return
				}
				if !more {
					break
				}
				// The reader queued an inline call's answer while this
				// goroutine held the write, found it busy and left the
				// answer to it.
				continue
			}
			more, err := c.write(buf)
			if err != nil {
				return
			}
			if !more {
				break
			}
		}
	}
}

// takeWrite takes what is queued for writing, unless another goroutine
// is writing (ok false).
func (c *conn) takeWrite() (buf []byte, closing, ok bool) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.writing {
		return nil, false, false
	}
	buf = c.wbuf
	c.wbuf = c.spare[:0]
	c.spare = nil
	c.writing = true
	c.ctrlQueued = 0
	if len(buf) >= maxQueuedWrite {
		c.winCond.Broadcast() // senders wait for room in the buffer
	}
	return buf, c.wclosed, true
}

// doneWrite hands back a written buffer and reports whether more is
// queued (or the connection closing).
func (c *conn) doneWrite(buf []byte) (more bool) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.writing = false
	if cap(buf) <= maxSpareBuffer {
		c.spare = buf[:0]
	}
	return len(c.wbuf) > 0 || c.wclosed
}

// flushFromReader writes what is queued on the reader's goroutine, which
// has read everything that arrived: the answers of the calls it ran
// inline leave without waking the writer.
func (c *conn) flushFromReader() {
	c.wmu.Lock()
	idle := !c.writing && len(c.wbuf) > 0 && !c.wclosed
	c.wmu.Unlock()
	if !idle {
		return
	}
	buf, _, ok := c.takeWrite()
	if !ok {
		return
	}
	if more, err := c.write(buf); err == nil && more {
		c.kickWriter()
	}
}

// maxQueuedWrite bounds what senders queue for a connection beyond what
// is being written: a sender waits for the writer below it (or for the
// stall timeout), whatever windows the client grants.
const maxQueuedWrite = 1 << 20

// write writes a buffer takeWrite gave, hands it back and reports whether
// more is queued. A failed write closes the connection, and so does one
// the client does not take within the stall timeout.
func (c *conn) write(buf []byte) (more bool, err error) {
	c.armWriteDeadline()
	_, err = c.nc.Write(buf)
	more = c.doneWrite(buf)
	if err != nil {
		c.close()
		c.nc.Close()
		c.kickWriter() // the writer may be waiting for this writer to finish
	}
	return more, err
}

// armWriteDeadline makes a write the client does not take within
// between half the stall timeout and the whole of it fail. It moves the
// deadline only when half of it has passed, so a busy connection rarely
// pays for it. Only the goroutine writing calls it.
func (c *conn) armWriteDeadline() {
	now := time.Now()
	if c.writeDeadline.Sub(now) > c.opts.StallTimeout/2 {
		return
	}
	c.writeDeadline = now.Add(c.opts.StallTimeout)
	c.nc.SetWriteDeadline(c.writeDeadline)
	if c.closing.Load() {
		c.nc.SetWriteDeadline(now.Add(closeWriteTimeout)) // close set it first
	}
}

// maxSpareBuffer is the largest write buffer kept for reuse.
const maxSpareBuffer = 1 << 20
