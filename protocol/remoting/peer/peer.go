package peer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
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
	// ErrStalled: the other end stopped reading while responses to its
	// requests piled up (Options.MaxQueuedResponses); the connection was
	// shut down.
	ErrStalled = errors.New("peer: the other end stopped reading")
)

// Defaults for Options.
const (
	DefaultDialTimeout    = 3 * time.Second
	DefaultRequestTimeout = 30 * time.Second
	DefaultQueueLength    = 1024
	// DefaultMaxQueuedResponses is the default of
	// Options.MaxQueuedResponses.
	DefaultMaxQueuedResponses = 256 << 20
	maxPooledBuffer           = 1 << 20
	// corkLimit is how many bytes of responses a reading goroutine
	// gathers before it writes them, when more requests are waiting to be
	// read.
	corkLimit = 64 << 10
)

// Handler answers the requests that the other end sends.
type Handler interface {
	// HandleRequest returns the response to req, or nil to send none. The
	// Peer sets the response's opaque and response flag, and drops it
	// when req is oneway. ctx is cancelled when the Peer closes or the
	// connection is lost, except for oneway requests: nobody waits for
	// their answer, so they are carried out whatever becomes of the
	// connection, and their handlers must not wait long. With
	// Options.Inline, HandleRequest runs on the goroutine that reads the
	// connection and must call Detach(ctx) before it waits for anything.
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
	// MaxQueuedResponses bounds the bytes of responses waiting to be
	// written. A peer that keeps sending requests but stops reading their
	// answers would otherwise hold them all; past the bound its
	// connection is shut down. Default DefaultMaxQueuedResponses
	// (256 MiB).
	MaxQueuedResponses int
	// Handler answers requests from the other end. Default: answer
	// REQUEST_CODE_NOT_SUPPORTED (nothing for oneway requests).
	Handler Handler
	// Inline runs Handler on the goroutine that reads the connection
	// instead of a goroutine per request, and writes the responses of
	// requests that arrived together in one write. While a handler runs
	// inline nothing else is read from the connection, responses to
	// Invoke included, so a handler that may wait (for the disk, a long
	// poll, a lock, a request of its own) calls Detach first. A handler
	// that returns without detaching must not keep the request, its Body
	// or anything aliasing them: the next frame reuses their memory.
	// Default false: every request runs on a goroutine of its own.
	Inline bool
	// DeferExtFields leaves the extFields of incoming JSON frames,
	// requests and responses, undecoded until asked for (see
	// wire.DecodeOptions.DeferExtFields): read them with DecodeHeader, or
	// call LoadExtFields before using ExtFields. Default false.
	DeferExtFields bool
	// Budget, when set, bounds the memory of the incoming frames this
	// Peer holds, together with every other Peer sharing it: reading
	// waits for room before a frame's memory is taken. Default nil: no
	// bound beyond MaxFrameSize.
	Budget *Budget
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
	if o.MaxQueuedResponses <= 0 {
		o.MaxQueuedResponses = DefaultMaxQueuedResponses
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
	in     *wire.Reader  // used by the reading goroutine only
	held   int           // budget taken for the frame just read; reading goroutine only
	closed chan struct{} // closed when the connection is shut down

	nextOpaque atomic.Int32

	mu      sync.Mutex
	pending map[int32]*call
	err     error   // why the client stopped; set once, under mu
	werr    error   // why writing failed, while reading goes on; set once, under mu
	spare   *reader // a goroutine that stopped reading and may read again
	async   int     // InvokeAsync calls pending
	sweep   bool    // the sweeper of InvokeAsync calls runs

	out outbox

	handlerCtx    context.Context
	cancelHandler context.CancelFunc
	onewayCtx     context.Context // handlerCtx without its cancellation
	handlers      sync.WaitGroup  // handlers on goroutines of their own
	loops         sync.WaitGroup  // the writer and every reading goroutine
}

type call struct {
	done chan struct{} // receives one token when resp or err is set
	resp *wire.Command
	err  error

	// InvokeAsync calls: cb is called instead of signalling done, and
	// the sweeper fails the call after deadline (unix ns).
	cb       func(*wire.Command, error)
	deadline int64
	code     int32
	start    time.Time
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
		in:      wire.NewReader(conn, wire.DecodeOptions{MaxFrameSize: opts.MaxFrameSize, DeferExtFields: opts.DeferExtFields}),
		closed:  make(chan struct{}),
		pending: make(map[int32]*call),
	}
	c.out.init()
	if b := opts.Budget; b != nil {
		c.in.SetReserve(func(n int) error {
			if err := b.acquire(n, c.closed); err != nil {
				return err
			}
			c.held = n
			return nil
		})
	}
	c.handlerCtx, c.cancelHandler = context.WithCancel(context.Background())
	c.onewayCtx = context.WithoutCancel(c.handlerCtx)
	c.loops.Add(2)
	go c.writeLoop()
	go c.readLoop(c.newReader())
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
		switch {
		case errors.Is(reason, io.EOF) || errors.Is(reason, net.ErrClosed):
			level = slog.LevelDebug
		case errors.Is(reason, syscall.EPIPE) || errors.Is(reason, syscall.ECONNRESET):
			level = slog.LevelInfo
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
	c.out.discard()
	c.fail(pending, reason)
}

// register assigns an opaque and records a pending call.
func (c *Peer) register() (int32, *call, error) {
	cl := callPool.Get().(*call)
	opaque := c.nextOpaque.Add(1)
	c.mu.Lock()
	if err := c.stoppedLocked(); err != nil {
		c.mu.Unlock()
		callPool.Put(cl)
		return 0, nil, err
	}
	c.pending[opaque] = cl
	c.mu.Unlock()
	return opaque, cl, nil
}

// stoppedLocked returns why nothing more can be sent: the connection
// was shut down, or writing to it failed. c.mu is held.
func (c *Peer) stoppedLocked() error {
	switch {
	case c.err != nil:
		return c.err
	case c.werr != nil:
		return fmt.Errorf("%w: %w", ErrConnectionLost, c.werr)
	}
	return nil
}

// stopped is stoppedLocked for callers that do not hold c.mu.
func (c *Peer) stopped() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stoppedLocked()
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
	cl.resp, cl.err, cl.cb = nil, nil, nil
	callPool.Put(cl)
}

// encode appends cmd with the given opaque and flags into a pooled buffer
// without modifying cmd, then calls its BodyDone.
func (c *Peer) encode(cmd *wire.Command, opaque, setFlags, clearFlags int32) (*[]byte, error) {
	out := *cmd
	out.Opaque = opaque
	out.Flag = (out.Flag | setFlags) &^ clearFlags
	buf := bufPool.Get().(*[]byte)
	b, err := out.AppendTo((*buf)[:0], c.opts.SerializeType)
	if cmd.BodyDone != nil {
		cmd.BodyDone()
	}
	if err != nil {
		putBuf(buf)
		return nil, fmt.Errorf("peer: encode %s: %w", wire.RequestCode(cmd.Code), err)
	}
	*buf = b
	return buf, nil
}

// enqueue hands a request frame to the writer goroutine, waiting while
// Options.QueueLength frames are queued.
func (c *Peer) enqueue(ctx context.Context, buf *[]byte, timeout <-chan time.Time) error {
	for {
		queued, err := c.out.put(buf, c.opts.QueueLength)
		if err != nil {
			putBuf(buf)
			return c.stopped()
		}
		if queued {
			c.out.kickWriter()
			return nil
		}
		select {
		case <-c.out.space:
		case <-c.closed:
			putBuf(buf)
			return c.stopped()
		case <-ctx.Done():
			putBuf(buf)
			return ctx.Err()
		case <-timeout:
			putBuf(buf)
			return ErrTimeout
		}
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

// Recycle hands back the memory of a response that Invoke returned or
// InvokeAsync delivered, for a later frame to reuse: its Body and
// undecoded extFields must not be used afterwards, and it must not be
// decoded again (strings decoded from it stay valid). It is optional.
func (c *Peer) Recycle(resp *wire.Command) { c.in.Recycle(resp) }

// InvokeAsync sends a request and returns once it is queued for writing;
// done is called with the response (whatever its code) or with the error
// that ended the call, exactly once, unless InvokeAsync itself returns an
// error. done runs on the goroutine that reads the connection, or on the
// one that shuts the Peer down or times the call out, so it must be quick
// and must not wait for other calls of this Peer. ctx bounds the wait for
// room in the write queue; the response is awaited for
// Options.RequestTimeout, or until ctx's deadline when that comes first.
// Like Invoke, it does not modify cmd or keep it after returning.
func (c *Peer) InvokeAsync(ctx context.Context, cmd *wire.Command, done func(*wire.Command, error)) error {
	start := time.Now()
	cl := callPool.Get().(*call)
	cl.cb, cl.code, cl.start = done, cmd.Code, start
	cl.deadline = 0
	if c.opts.RequestTimeout > 0 {
		cl.deadline = start.Add(c.opts.RequestTimeout).UnixNano()
	}
	if d, ok := ctx.Deadline(); ok && (cl.deadline == 0 || d.UnixNano() < cl.deadline) {
		cl.deadline = d.UnixNano()
	}
	opaque := c.nextOpaque.Add(1)
	c.mu.Lock()
	if err := c.stoppedLocked(); err != nil {
		c.mu.Unlock()
		recycle(cl)
		return c.requestError(cmd, 0, err)
	}
	c.pending[opaque] = cl
	c.async++
	startSweeper := cl.deadline != 0 && !c.sweep
	if startSweeper {
		c.sweep = true
		c.loops.Add(1)
	}
	c.mu.Unlock()
	if startSweeper {
		go c.sweepLoop()
	}

	buf, err := c.encode(cmd, opaque, 0, wire.FlagResponse|wire.FlagOneway)
	if err == nil {
		err = c.enqueue(ctx, buf, nil)
	}
	if err != nil {
		if c.unregister(opaque) {
			c.mu.Lock()
			c.async--
			c.mu.Unlock()
			recycle(cl)
			return c.waitError(cmd, opaque, err, start)
		}
		// The call was taken (by shutdown) and done is being called.
		return nil
	}
	return nil
}

// complete ends an InvokeAsync call.
func (c *Peer) complete(cl *call, resp *wire.Command, err error) {
	cb := cl.cb
	recycle(cl)
	cb(resp, err)
}

func (c *Peer) asyncError(code, opaque int32, err error) error {
	return fmt.Errorf("peer: %s (opaque %d) to %s: %w", wire.RequestCode(code), opaque, c.addr, err)
}

// sweepLoop fails the InvokeAsync calls whose deadline has passed.
func (c *Peer) sweepLoop() {
	defer c.loops.Done()
	period := min(max(c.opts.RequestTimeout/10, 10*time.Millisecond), time.Second)
	t := time.NewTicker(period)
	defer t.Stop()
	var expired []*call
	var opaques []int32
	for {
		select {
		case <-c.closed:
			return
		case now := <-t.C:
			ns := now.UnixNano()
			c.mu.Lock()
			if c.async > 0 {
				for opaque, cl := range c.pending {
					if cl.cb != nil && cl.deadline != 0 && cl.deadline <= ns {
						delete(c.pending, opaque)
						c.async--
						expired = append(expired, cl)
						opaques = append(opaques, opaque)
					}
				}
			}
			c.mu.Unlock()
			for i, cl := range expired {
				elapsed := now.Sub(cl.start).Round(time.Millisecond)
				c.complete(cl, nil, fmt.Errorf("peer: %s (opaque %d) to %s: %w: no response after %v",
					wire.RequestCode(cl.code), opaques[i], c.addr, ErrTimeout, elapsed))
				expired[i] = nil
			}
			expired, opaques = expired[:0], opaques[:0]
		}
	}
}

// InvokeOneway sends a request with the oneway flag set and returns once
// it is queued for writing; no response is expected. A connection failure
// after that point loses the request silently.
func (c *Peer) InvokeOneway(ctx context.Context, cmd *wire.Command) error {
	if err := c.stopped(); err != nil {
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

// writeLoop writes the requests that Invoke queues.
func (c *Peer) writeLoop() {
	defer c.loops.Done()
	for {
		select {
		case <-c.out.kick:
		case <-c.closed:
			return
		}
		if !c.flush() {
			return
		}
	}
}

// flush writes every queued frame unless another goroutine is already
// doing so (it then writes these too). It reports false once writing has
// failed.
func (c *Peer) flush() bool {
	if err := c.out.flush(c.conn); err != nil {
		c.writeFailed(err)
		return false
	}
	return true
}

// writeFailedGrace bounds how long the connection is still read once
// writing to it has failed.
const writeFailedGrace = 5 * time.Second

// writeFailed stops writing after a failed write but leaves the
// connection to the reading goroutine: the other end may have closed it
// right after sending requests, and what it sent (oneway offset commits
// before a consumer shuts down, say) is still in the socket and must be
// handled. Reading ends at the end of the stream, or writeFailedGrace from
// now, and only then is the connection shut down. Pending and later calls
// fail at once.
func (c *Peer) writeFailed(err error) {
	c.mu.Lock()
	if c.err != nil || c.werr != nil {
		c.mu.Unlock()
		return
	}
	c.werr = fmt.Errorf("write: %w", err)
	reason := fmt.Errorf("%w: %w", ErrConnectionLost, c.werr)
	pending := c.pending
	c.pending = map[int32]*call{}
	c.async = 0
	c.mu.Unlock()
	c.out.discard()
	_ = c.conn.SetReadDeadline(time.Now().Add(writeFailedGrace))
	c.fail(pending, reason)
}

// fail ends the calls of pending with err.
func (c *Peer) fail(pending map[int32]*call, err error) {
	for opaque, cl := range pending {
		if cl.cb != nil {
			c.complete(cl, nil, c.asyncError(cl.code, opaque, err))
			continue
		}
		cl.err = err
		cl.done <- struct{}{}
	}
}

// reader is the state of a goroutine that reads the connection. With
// Options.Inline it runs handlers itself; a handler that calls Detach
// hands reading over to another goroutine, and its own goroutine then
// waits as the Peer's spare reader, to take over from the next handler
// that detaches.
type reader struct {
	p       *Peer
	ctx     context.Context // the handlers' context, carrying this reader
	oneway  context.Context // ctx without its cancellation, for oneway requests
	reading bool            // this goroutine holds the read side
	wake    chan struct{}   // a token makes a spare the reader
}

type readerKey struct{}

func (c *Peer) newReader() *reader {
	r := &reader{p: c, wake: make(chan struct{}, 1)}
	r.ctx = context.WithValue(c.handlerCtx, readerKey{}, r)
	r.oneway = context.WithoutCancel(r.ctx)
	return r
}

// Detach lets a handler that runs inline (Options.Inline) wait: another
// goroutine takes over reading the connection, and the handler's
// response is written as soon as it returns. Call it from the handler's
// goroutine with the context the handler was given. It does nothing for
// handlers that do not run inline, or when called again.
func Detach(ctx context.Context) {
	if r, ok := ctx.Value(readerKey{}).(*reader); ok {
		r.detach()
	}
}

func (r *reader) detach() {
	if !r.reading {
		return
	}
	r.reading = false
	c := r.p
	c.mu.Lock()
	next := c.spare
	c.spare = nil
	stopped := c.err != nil
	c.mu.Unlock()
	switch {
	case next != nil:
		next.wake <- struct{}{}
	case !stopped:
		c.loops.Add(1) // this goroutine is counted, so the group is not idle
		go c.readLoop(c.newReader())
	}
}

// readLoop reads the connection until it fails, taking breaks as a spare
// while other goroutines read.
func (c *Peer) readLoop(r *reader) {
	defer c.loops.Done()
	for c.read(r) && c.park(r) {
	}
}

// park makes r the spare reader and waits until a detaching handler
// wakes it. It reports false, at once, when there is a spare already or
// when the connection is shut down.
func (c *Peer) park(r *reader) bool {
	c.mu.Lock()
	if c.spare != nil || c.err != nil {
		c.mu.Unlock()
		return false
	}
	c.spare = r
	c.mu.Unlock()
	select {
	case <-r.wake:
		return true
	case <-c.closed:
		return false
	}
}

// read decodes frames and routes them until the connection fails (false)
// or an inline handler detaches (true, once its response is queued).
func (c *Peer) read(r *reader) bool {
	r.reading = true
	for {
		if c.opts.Inline && c.in.Buffered() == 0 {
			// Responses of inline handlers wait until nothing more is
			// buffered, so that one write carries all of them. A failed
			// write does not stop reading: what the other end sent is
			// handled all the same.
			c.flush()
		}
		cmd, err := c.in.ReadCommand()
		held := c.held
		c.held = 0
		if err != nil {
			c.release(held)
			if errors.Is(err, wire.ErrFrameTooLarge) {
				c.refuse(err)
			}
			c.shutdown(c.readError(err))
			return false
		}
		if cmd.IsResponse() {
			c.deliver(cmd)
			c.release(held)
			continue
		}
		if !c.opts.Inline {
			c.handlers.Add(1)
			go c.serve(cmd, held)
			continue
		}
		ctx := r.ctx
		if cmd.IsOneway() {
			ctx = r.oneway
		}
		resp := c.handle(ctx, cmd)
		if r.reading {
			c.respond(cmd, resp, false)
			c.in.Recycle(cmd)
			c.release(held)
			continue
		}
		c.respond(cmd, resp, true)
		c.release(held)
		return true
	}
}

// maxRefusedHeader bounds the header read from a frame refused for its
// size, and refusedHeadWait the wait for it.
const (
	maxRefusedHeader = 64 << 10
	refusedHeadWait  = time.Second
)

// refuse answers a request whose frame was too large (err) with
// MESSAGE_ILLEGAL, when its header can be read, before the connection
// is closed: the stream cannot be resynchronised without reading the
// whole frame. Once the answer is written the rest of the frame is read
// and dropped (for at most writeFailedGrace) before the connection
// closes, so that the sender finishes writing and reads the answer
// instead of meeting a reset.
func (c *Peer) refuse(err error) {
	// A sender of a mere length prefix is not waited for long.
	_ = c.conn.SetReadDeadline(time.Now().Add(refusedHeadWait))
	req, rest, herr := c.in.ReadRefusedHead(maxRefusedHeader)
	if herr != nil || req.IsResponse() || req.IsOneway() {
		return
	}
	c.respond(req, wire.NewResponse(req, wire.MessageIllegal, err.Error()+"; closing the connection"), true)
	_ = c.conn.SetReadDeadline(time.Now().Add(writeFailedGrace))
	_, _ = c.in.Discard(rest)
}

// readError is why the connection is shut down once reading failed with
// err: a write failure before it comes first.
func (c *Peer) readError(err error) error {
	c.mu.Lock()
	werr := c.werr
	c.mu.Unlock()
	if werr != nil {
		return fmt.Errorf("%w; then read: %w", werr, err)
	}
	return fmt.Errorf("read: %w", err)
}

// deliver completes the call waiting for resp. Responses nobody waits for
// any more (the caller gave up) are dropped.
func (c *Peer) deliver(resp *wire.Command) {
	c.mu.Lock()
	cl, ok := c.pending[resp.Opaque]
	if ok {
		delete(c.pending, resp.Opaque)
		if cl.cb != nil {
			c.async--
		}
	}
	c.mu.Unlock()
	switch {
	case !ok:
	case cl.cb != nil:
		c.complete(cl, resp, nil)
	default:
		cl.resp = resp
		cl.done <- struct{}{}
	}
}

// serve runs the handler for one request on a goroutine of its own.
func (c *Peer) serve(req *wire.Command, held int) {
	defer c.handlers.Done()
	ctx := c.handlerCtx
	if req.IsOneway() {
		ctx = c.onewayCtx
	}
	c.respond(req, c.handle(ctx, req), true)
	c.release(held)
}

// release gives the budget taken for a frame back.
func (c *Peer) release(held int) {
	if held != 0 {
		c.opts.Budget.release(held)
	}
}

// lendMin is the body size from which a response whose body can be
// handed back (wire.Command.BodyDone) is written from its own memory
// instead of being copied into the frame.
const lendMin = 4 << 10

// respond queues the response to req, if there is one to send, and
// writes it out now when flush is set or enough responses are waiting.
func (c *Peer) respond(req, resp *wire.Command, flush bool) {
	if resp == nil || req.IsOneway() {
		if resp != nil && resp.BodyDone != nil {
			resp.BodyDone()
		}
		return
	}
	f, err := c.encodeResponse(req, resp)
	if err != nil {
		c.opts.Logger.Error("remoting: cannot encode response", "addr", c.addr, "code", req.RequestCode(), "err", err)
		return
	}
	n, err := c.out.add(f)
	if err != nil {
		f.release()
		return
	}
	if n > c.opts.MaxQueuedResponses {
		c.shutdown(fmt.Errorf("%w: %d bytes of responses wait to be written (limit %d): the other end does not read them", ErrStalled, n, c.opts.MaxQueuedResponses))
		return
	}
	if flush || n >= corkLimit {
		c.flush()
	}
}

// encodeResponse encodes resp as the answer to req; a large body with a
// BodyDone is lent to the frame rather than copied.
func (c *Peer) encodeResponse(req, resp *wire.Command) (outFrame, error) {
	if resp.BodyDone == nil || len(resp.Body) < lendMin {
		buf, err := c.encode(resp, req.Opaque, wire.FlagResponse, wire.FlagOneway)
		return outFrame{buf: buf}, err
	}
	out := *resp
	out.Opaque = req.Opaque
	out.Flag = (out.Flag | wire.FlagResponse) &^ wire.FlagOneway
	buf := bufPool.Get().(*[]byte)
	b, err := out.AppendHeadTo((*buf)[:0], c.opts.SerializeType)
	if err != nil {
		putBuf(buf)
		resp.BodyDone()
		return outFrame{}, fmt.Errorf("peer: encode %s: %w", wire.ResponseCode(resp.Code), err)
	}
	*buf = b
	return outFrame{buf: buf, body: resp.Body, done: resp.BodyDone}, nil
}

// HandlerPanicRemark begins the remark of the SYSTEM_ERROR answer to a
// request whose handler panicked; the panic's value follows.
const HandlerPanicRemark = "handler panic: "

func (c *Peer) handle(ctx context.Context, req *wire.Command) (resp *wire.Command) {
	if c.opts.Handler == nil {
		return wire.NewResponse(req, wire.RequestCodeNotSupported,
			fmt.Sprintf("request code %d not supported", req.Code))
	}
	defer func() {
		if p := recover(); p != nil {
			c.opts.Logger.Error("remoting: handler panicked", "addr", c.addr, "code", req.RequestCode(), "panic", p)
			resp = wire.NewResponse(req, wire.SystemError, HandlerPanicRemark+fmt.Sprint(p))
		}
	}()
	return c.opts.Handler.HandleRequest(ctx, req)
}
