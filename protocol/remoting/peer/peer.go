package peer

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Errors. Errors returned by a Peer wrap one of these and say which
// request and address they concern.
var (
	// ErrClosed: the client was closed by Close.
	ErrClosed = errors.New("peer: closed")
	// ErrConnectionLost: the connection failed; the error also wraps the
	// cause (io.EOF, a net error, a wire decoding error).
	ErrConnectionLost = errors.New("peer: connection lost")
	// ErrTimeout: no response arrived in time. When the deadline came from
	// the caller's context the error also wraps context.DeadlineExceeded.
	ErrTimeout = errors.New("peer: request timed out")
)

// Defaults for Options.
const (
	DefaultDialTimeout    = 3 * time.Second
	DefaultRequestTimeout = 30 * time.Second
	DefaultQueueLength    = 1024
	writeBufferSize       = 64 << 10
	maxPooledBuffer       = 1 << 20
)

// Handler answers the requests that the other end sends.
type Handler interface {
	// HandleRequest returns the response to req, or nil to send none. The
	// Peer sets the response's opaque and response flag, and drops it
	// when req is oneway. ctx is cancelled when the Peer closes.
	HandleRequest(ctx context.Context, req *wire.Command) *wire.Command
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req *wire.Command) *wire.Command

// HandleRequest calls f.
func (f HandlerFunc) HandleRequest(ctx context.Context, req *wire.Command) *wire.Command {
	return f(ctx, req)
}

// Options configures a Peer. The zero value is ready to use.
type Options struct {
	// DialTimeout bounds connecting when the context given to Dial has no
	// earlier deadline. Default DefaultDialTimeout (3 s).
	DialTimeout time.Duration
	// RequestTimeout bounds Invoke when its context has no deadline.
	// Default DefaultRequestTimeout (30 s); negative means no limit.
	RequestTimeout time.Duration
	// SerializeType is the header encoding of outgoing frames. Default
	// wire.JSON, which every server accepts.
	SerializeType wire.SerializeType
	// MaxFrameSize limits incoming frames. Default wire.DefaultMaxFrameSize.
	MaxFrameSize int
	// QueueLength is how many encoded frames may wait for the writer
	// before Invoke blocks. Default DefaultQueueLength (1024).
	QueueLength int
	// Handler answers requests from the other end. Default: answer
	// REQUEST_CODE_NOT_SUPPORTED (nothing for oneway requests).
	Handler Handler
	// TLS, when set, makes Dial use TLS with this configuration.
	TLS *tls.Config
	// Logger receives connection events (never one per request). Default:
	// discard.
	Logger *slog.Logger
}

func (o *Options) ensureDefaults() {
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.MaxFrameSize <= 0 {
		o.MaxFrameSize = wire.DefaultMaxFrameSize
	}
	if o.QueueLength <= 0 {
		o.QueueLength = DefaultQueueLength
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Peer is one multiplexed remoting connection, from either end.
type Peer struct {
	conn   net.Conn
	addr   string
	opts   Options
	queue  chan *[]byte
	closed chan struct{} // closed when the connection is shut down

	nextOpaque atomic.Int32

	mu      sync.Mutex
	pending map[int32]*call
	err     error // why the client stopped; set once, under mu

	handlerCtx    context.Context
	cancelHandler context.CancelFunc
	handlers      sync.WaitGroup
	loops         sync.WaitGroup
}

type call struct {
	done chan struct{} // receives one token when resp or err is set
	resp *wire.Command
	err  error
}

var (
	callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}
	bufPool  = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}
	// timerPool holds stopped timers for the default request timeout.
	timerPool sync.Pool
)

func putBuf(b *[]byte) {
	if cap(*b) <= maxPooledBuffer {
		*b = (*b)[:0]
		bufPool.Put(b)
	}
}

// Dial connects to addr ("host:port") and starts the client.
func Dial(ctx context.Context, addr string, opts Options) (*Peer, error) {
	opts.ensureDefaults()
	d := &net.Dialer{Timeout: opts.DialTimeout}
	var (
		conn net.Conn
		err  error
	)
	if opts.TLS != nil {
		conn, err = (&tls.Dialer{NetDialer: d, Config: opts.TLS}).DialContext(ctx, "tcp", addr)
	} else {
		conn, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("peer: dial %s: %w", addr, err)
	}
	return New(conn, opts), nil
}

// New starts a client on an established connection, which it then owns.
func New(conn net.Conn, opts Options) *Peer {
	opts.ensureDefaults()
	c := &Peer{
		conn:    conn,
		addr:    conn.RemoteAddr().String(),
		opts:    opts,
		queue:   make(chan *[]byte, opts.QueueLength),
		closed:  make(chan struct{}),
		pending: make(map[int32]*call),
	}
	c.handlerCtx, c.cancelHandler = context.WithCancel(context.Background())
	c.loops.Add(2)
	go c.writeLoop()
	go c.readLoop()
	return c
}

// Addr returns the server address.
func (c *Peer) Addr() string { return c.addr }

// Done is closed when the connection is shut down, by Close or by an
// error.
func (c *Peer) Done() <-chan struct{} { return c.closed }

// Err returns nil while the client works, then why it stopped: an error
// matching ErrClosed or ErrConnectionLost.
func (c *Peer) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close shuts the connection down, fails pending calls with ErrClosed,
// and waits for the client's goroutines, handlers included, to finish.
// It is safe to call more than once.
func (c *Peer) Close() error {
	c.shutdown(ErrClosed)
	c.loops.Wait()
	c.handlers.Wait()
	return nil
}

// shutdown records why the client stops (the first reason wins), closes
// the connection and fails every pending call.
func (c *Peer) shutdown(reason error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	if !errors.Is(reason, ErrClosed) {
		// The other end closing the connection is ordinary; anything else
		// is worth a warning.
		level := slog.LevelWarn
		if errors.Is(reason, io.EOF) || errors.Is(reason, net.ErrClosed) {
			level = slog.LevelDebug
		}
		reason = fmt.Errorf("%w: %w", ErrConnectionLost, reason)
		c.opts.Logger.Log(context.Background(), level, "remoting connection lost", "addr", c.addr, "err", reason)
	}
	c.err = reason
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()

	close(c.closed)
	c.cancelHandler()
	_ = c.conn.Close()
	for _, cl := range pending {
		cl.err = reason
		cl.done <- struct{}{}
	}
}

// register assigns an opaque and records a pending call.
func (c *Peer) register() (int32, *call, error) {
	cl := callPool.Get().(*call)
	opaque := c.nextOpaque.Add(1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		callPool.Put(cl)
		return 0, nil, err
	}
	c.pending[opaque] = cl
	c.mu.Unlock()
	return opaque, cl, nil
}

// unregister removes a pending call; it reports false when the reader or
// shutdown already took it (and will signal done).
func (c *Peer) unregister(opaque int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pending[opaque]; ok {
		delete(c.pending, opaque)
		return true
	}
	return false
}

func recycle(cl *call) {
	cl.resp, cl.err = nil, nil
	callPool.Put(cl)
}

// encode appends cmd with the given opaque and flags into a pooled buffer
// without modifying cmd.
func (c *Peer) encode(cmd *wire.Command, opaque, setFlags, clearFlags int32) (*[]byte, error) {
	out := *cmd
	out.Opaque = opaque
	out.Flag = (out.Flag | setFlags) &^ clearFlags
	buf := bufPool.Get().(*[]byte)
	b, err := out.AppendTo((*buf)[:0], c.opts.SerializeType)
	if err != nil {
		putBuf(buf)
		return nil, fmt.Errorf("peer: encode %s: %w", wire.RequestCode(cmd.Code), err)
	}
	*buf = b
	return buf, nil
}

// enqueue hands a frame to the writer.
func (c *Peer) enqueue(ctx context.Context, buf *[]byte, timeout <-chan time.Time) error {
	select {
	case c.queue <- buf:
		return nil
	default:
	}
	select {
	case c.queue <- buf:
		return nil
	case <-c.closed:
		putBuf(buf)
		return c.Err()
	case <-ctx.Done():
		putBuf(buf)
		return ctx.Err()
	case <-timeout:
		putBuf(buf)
		return ErrTimeout
	}
}

// Invoke sends a request and waits for its response. It assigns the
// opaque itself (cmd.Opaque is ignored) and clears the response and oneway
// flags. It returns the response whatever its code; check
// resp.ResponseCode(). Without a deadline on ctx, Options.RequestTimeout
// applies.
func (c *Peer) Invoke(ctx context.Context, cmd *wire.Command) (*wire.Command, error) {
	start := time.Now()
	var timeout <-chan time.Time
	var timer *time.Timer
	if _, ok := ctx.Deadline(); !ok && c.opts.RequestTimeout > 0 {
		timer = getTimer(c.opts.RequestTimeout)
		defer timerPool.Put(timer)
		defer timer.Stop()
		timeout = timer.C
	}

	opaque, cl, err := c.register()
	if err != nil {
		return nil, c.requestError(cmd, 0, err)
	}
	buf, err := c.encode(cmd, opaque, 0, wire.FlagResponse|wire.FlagOneway)
	if err == nil {
		err = c.enqueue(ctx, buf, timeout)
	}
	if err != nil {
		if c.unregister(opaque) {
			recycle(cl)
			return nil, c.waitError(cmd, opaque, err, start)
		}
		<-cl.done // shutdown took the call and is signalling it
		err = cl.err
		recycle(cl)
		return nil, c.requestError(cmd, opaque, err)
	}

	select {
	case <-cl.done:
	case <-ctx.Done():
		err = ctx.Err()
	case <-timeout:
		err = ErrTimeout
	}
	if err != nil {
		if c.unregister(opaque) {
			recycle(cl)
			return nil, c.waitError(cmd, opaque, err, start)
		}
		<-cl.done // the answer raced the deadline; use it
	}
	resp, err := cl.resp, cl.err
	recycle(cl)
	if err != nil {
		return nil, c.requestError(cmd, opaque, err)
	}
	return resp, nil
}

// InvokeOneway sends a request with the oneway flag set and returns once
// it is queued for writing; no response is expected. A connection failure
// after that point loses the request silently.
func (c *Peer) InvokeOneway(ctx context.Context, cmd *wire.Command) error {
	if err := c.Err(); err != nil {
		return c.requestError(cmd, 0, err)
	}
	opaque := c.nextOpaque.Add(1)
	buf, err := c.encode(cmd, opaque, wire.FlagOneway, wire.FlagResponse)
	if err != nil {
		return err
	}
	if err := c.enqueue(ctx, buf, nil); err != nil {
		return c.requestError(cmd, opaque, err)
	}
	return nil
}

func (c *Peer) requestError(cmd *wire.Command, opaque int32, err error) error {
	return fmt.Errorf("peer: %s (opaque %d) to %s: %w", wire.RequestCode(cmd.Code), opaque, c.addr, err)
}

// waitError describes a call abandoned because of ctx or the timeout.
func (c *Peer) waitError(cmd *wire.Command, opaque int32, err error, start time.Time) error {
	elapsed := time.Since(start).Round(time.Millisecond)
	switch {
	case errors.Is(err, ErrTimeout):
		return fmt.Errorf("peer: %s (opaque %d) to %s: %w: no response after %v (request timeout)",
			wire.RequestCode(cmd.Code), opaque, c.addr, ErrTimeout, elapsed)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("peer: %s (opaque %d) to %s: %w: no response after %v: %w",
			wire.RequestCode(cmd.Code), opaque, c.addr, ErrTimeout, elapsed, err)
	default:
		return c.requestError(cmd, opaque, err)
	}
}

func getTimer(d time.Duration) *time.Timer {
	if t, ok := timerPool.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

// writeLoop writes queued frames, flushing when the queue runs dry.
func (c *Peer) writeLoop() {
	defer c.loops.Done()
	w := bufio.NewWriterSize(c.conn, writeBufferSize)
	for {
		var buf *[]byte
		select {
		case buf = <-c.queue:
		case <-c.closed:
			return
		}
		for buf != nil {
			_, err := w.Write(*buf)
			putBuf(buf)
			if err != nil {
				c.shutdown(fmt.Errorf("write: %w", err))
				return
			}
			// Take whatever else is queued, then flush at once: waiting
			// for more to batch delays every request and response.
			select {
			case buf = <-c.queue:
			default:
				buf = nil
			}
		}
		if err := w.Flush(); err != nil {
			c.shutdown(fmt.Errorf("write: %w", err))
			return
		}
	}
}

// readLoop decodes frames and routes them.
func (c *Peer) readLoop() {
	defer c.loops.Done()
	r := wire.NewReader(c.conn, wire.DecodeOptions{MaxFrameSize: c.opts.MaxFrameSize})
	for {
		cmd, err := r.ReadCommand()
		if err != nil {
			c.shutdown(fmt.Errorf("read: %w", err))
			return
		}
		if cmd.IsResponse() {
			c.deliver(cmd)
			continue
		}
		c.handlers.Add(1)
		go c.serve(cmd)
	}
}

// deliver completes the call waiting for resp. Responses nobody waits for
// any more (the caller gave up) are dropped.
func (c *Peer) deliver(resp *wire.Command) {
	c.mu.Lock()
	cl, ok := c.pending[resp.Opaque]
	if ok {
		delete(c.pending, resp.Opaque)
	}
	c.mu.Unlock()
	if ok {
		cl.resp = resp
		cl.done <- struct{}{}
	}
}

// serve runs the handler for one server-initiated request.
func (c *Peer) serve(req *wire.Command) {
	defer c.handlers.Done()
	resp := c.handle(req)
	if resp == nil || req.IsOneway() {
		return
	}
	buf, err := c.encode(resp, req.Opaque, wire.FlagResponse, wire.FlagOneway)
	if err != nil {
		c.opts.Logger.Error("remoting: cannot encode response to server request", "addr", c.addr, "code", req.RequestCode(), "err", err)
		return
	}
	_ = c.enqueue(c.handlerCtx, buf, nil)
}

func (c *Peer) handle(req *wire.Command) (resp *wire.Command) {
	if c.opts.Handler == nil {
		return wire.NewResponse(req, wire.RequestCodeNotSupported,
			fmt.Sprintf("request code %d not supported", req.Code))
	}
	defer func() {
		if p := recover(); p != nil {
			c.opts.Logger.Error("remoting: handler panicked", "addr", c.addr, "code", req.RequestCode(), "panic", p)
			resp = wire.NewResponse(req, wire.SystemError, fmt.Sprintf("handler panic: %v", p))
		}
	}()
	return c.opts.Handler.HandleRequest(c.handlerCtx, req)
}
