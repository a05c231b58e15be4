package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// stream is one call.
type stream struct {
	c      *conn
	id     uint32
	m      *method
	ctx    context.Context
	cancel context.CancelFunc
	md     metadata.MD // the request's metadata, as in ctx
	gzip   bool        // messages flagged compressed are gzip

	// Used by the reader only.
	partial    []byte // bytes of a message still arriving
	dispatched bool   // a unary call was started
	drain      bool   // no call: the request was answered, its body is dropped
	// contentLength is the request's content-length, -1 when it has none;
	// bodyLen counts the bytes of its DATA frames so far.
	contentLength, bodyLen int64

	// Used by the goroutine running the call.
	inline   bool // the call runs on the connection's reader
	detached bool // Detach handed reading to another goroutine
	corked   bool // Cork holds back the writer

	mu          sync.Mutex
	msgs        []inMsg // received, not yet read by the handler
	queued      int     // bytes in msgs
	heldPartial int64   // bytes of partial counted in the receive budget
	gone        bool    // the stream no longer counts in the receive budget
	unreleased  int64   // received bytes not yet credited to the client
	recvWin     int64   // what the client may still send on the stream
	recvDone    bool    // the client ended its side (END_STREAM)
	recvErr     error   // why reading ended early
	notify      chan struct{}

	// Guarded by c.wmu.
	sendWin    int64
	headerSent bool
	sendDone   bool // trailers queued, or the stream reset
	header     metadata.MD
	trailer    metadata.MD
}

// inMsg is one received message.
type inMsg struct {
	buf        *[]byte
	compressed bool
}

var (
	_ grpc.ServerStream          = (*stream)(nil)
	_ grpc.ServerTransportStream = (*transportStream)(nil)
)

// onHeaders takes a HEADERS or CONTINUATION frame; once a header block is
// complete it opens a call, or ends the client's side of one (trailers).
func (c *conn) onHeaders(f http2.Frame) error {
	var req request
	done, err := c.hblock.add(f, &req)
	if errors.Is(err, errHeaderBlockTooLarge) {
		return c.connError(http2.ErrCodeEnhanceYourCalm, err.Error())
	}
	if err != nil {
		return c.connError(http2.ErrCodeCompression, err.Error())
	}
	if !done {
		return nil
	}
	h := c.hblock
	id, ended := h.streamID, h.end
	c.mu.Lock()
	if st := c.streams[id]; st != nil {
		c.mu.Unlock()
		// Trailers: they end the client's side and carry no pseudo-header.
		if !ended || h.selfDep || h.malformed != nil || req.pseudo != 0 {
			c.resetStream(id, http2.ErrCodeProtocol)
			return nil
		}
		return st.onData(nil, 0, true)
	}
	if id%2 == 0 || id <= c.lastID {
		c.mu.Unlock()
		if id%2 == 1 && c.resetByServer(id) {
			return nil // the client sent it before it saw the reset
		}
		return c.connError(http2.ErrCodeProtocol, fmt.Sprintf("stream %d opened out of order", id))
	}
	c.opened(c.lastID, id)
	c.lastID = id
	refuse := c.goingAway || uint32(len(c.streams)) >= c.opts.MaxConcurrentStreams
	c.mu.Unlock()
	if refuse {
		if !c.calm(1) {
			return c.connError(http2.ErrCodeEnhanceYourCalm, "too many refused streams")
		}
		c.queueReset(id, http2.ErrCodeRefusedStream)
		return nil
	}
	if h.truncated {
		c.refuse(id, ended, 431, codes.ResourceExhausted, "request headers too large")
		return nil
	}
	if h.malformed == nil {
		h.malformed = req.complete()
	}
	if h.malformed == nil && h.selfDep {
		h.malformed = errors.New("a stream depends on itself")
	}
	if h.malformed == nil && ended && req.contentLength > 0 {
		h.malformed = errors.New("content-length without a body")
	}
	if h.malformed != nil {
		// A stream error (RFC 9113, section 8.1.1); the call never starts.
		c.queueReset(id, http2.ErrCodeProtocol)
		return nil
	}
	if req.method != "POST" {
		c.answerHTTP(id, ended, 405, "gRPC calls use POST, not "+req.method, req.contentLength)
		return nil
	}
	if !isGRPCContentType(req.contentType) {
		c.answerHTTP(id, ended, 415, fmt.Sprintf("content-type %q is not gRPC's", req.contentType), req.contentLength)
		return nil
	}
	if err := req.grpcErr; err != nil {
		c.refuse(id, ended, 200, codes.Internal, err.Error())
		return nil
	}
	if req.encoding != "" && req.encoding != "identity" && req.encoding != "gzip" {
		c.refuse(id, ended, 200, codes.Unimplemented, fmt.Sprintf("grpc-encoding %q is not supported; use gzip or none", req.encoding))
		return nil
	}
	m := c.srv.methods[req.path]
	if m == nil {
		c.refuse(id, ended, 200, codes.Unimplemented, fmt.Sprintf("unknown method %s", req.path))
		return nil
	}

	st := c.newStream(id, m, &req)
	c.mu.Lock()
	c.streams[id] = st
	c.mu.Unlock()
	if m.stream != nil {
		st.dispatched = true
		if err := c.runCall(st.runStream); err != nil {
			return err
		}
	}
	if ended {
		return st.onData(nil, 0, true)
	}
	return nil
}

// answerHTTP answers a request that is no gRPC call (another method or
// content type) with an HTTP status. While the client is still sending
// its body, the stream stays open to take it (flow control and
// content-length still apply) and drops it.
func (c *conn) answerHTTP(id uint32, clientDone bool, httpStatus int, msg string, contentLength int64) {
	c.wmu.Lock()
	if !c.wclosed {
		c.appendTrailersOnly(id, httpStatus, status.New(codes.Internal, msg), nil)
	}
	sendWin := c.peerInitWin
	c.wmu.Unlock()
	c.kickWriter()
	if clientDone {
		return
	}
	st := &stream{
		c:             c,
		id:            id,
		drain:         true,
		ctx:           c.ctx,
		cancel:        func() {},
		recvWin:       int64(c.opts.WindowSize),
		notify:        make(chan struct{}, 1),
		contentLength: contentLength,
		sendWin:       sendWin,
		sendDone:      true,
	}
	c.mu.Lock()
	c.streams[id] = st
	c.mu.Unlock()
}

// refuse answers a call that cannot start with a status and no message.
func (c *conn) refuse(id uint32, clientDone bool, httpStatus int, code codes.Code, msg string) {
	c.wmu.Lock()
	if !c.wclosed {
		c.appendTrailersOnly(id, httpStatus, status.New(code, msg), nil)
		if !clientDone {
			c.appendResetLocked(id, http2.ErrCodeNo)
		}
	}
	c.wmu.Unlock()
	c.kickWriter()
}

func (c *conn) newStream(id uint32, m *method, req *request) *stream {
	st := &stream{
		c:       c,
		id:      id,
		m:       m,
		gzip:    req.encoding == "gzip",
		recvWin: int64(c.opts.WindowSize),
		notify:  make(chan struct{}, 1),
		md:      req.md,

		contentLength: req.contentLength,
	}
	c.wmu.Lock()
	st.sendWin = c.peerInitWin
	c.wmu.Unlock()
	ctx := metadata.NewIncomingContext(c.ctx, req.md)
	ctx = grpc.NewContextWithServerTransportStream(ctx, (*transportStream)(st))
	if req.timeout > 0 {
		st.ctx, st.cancel = context.WithTimeout(ctx, req.timeout)
	} else {
		st.ctx, st.cancel = context.WithCancel(ctx)
	}
	return st
}

// onData takes the data of a DATA frame (n bytes with padding) and
// whether it ends the client's side. It runs on the reader, and so do
// the calls of Options.Inline: errDetached means one was detached.
func (st *stream) onData(data []byte, n int64, end bool) error {
	st.mu.Lock()
	if st.recvDone {
		st.mu.Unlock()
		st.c.resetStream(st.id, http2.ErrCodeStreamClosed)
		return nil
	}
	st.recvWin -= n
	st.unreleased += n
	over := st.recvWin < 0
	st.mu.Unlock()
	if over {
		st.c.resetStream(st.id, http2.ErrCodeFlowControl)
		return nil
	}
	if st.contentLength >= 0 {
		st.bodyLen += int64(len(data))
		if st.bodyLen > st.contentLength || end && st.bodyLen != st.contentLength {
			// Malformed (RFC 9113, section 8.1.1): a stream error.
			st.c.resetStream(st.id, http2.ErrCodeProtocol)
			return nil
		}
	}
	if st.drain {
		if end {
			st.c.removeStream(st.id)
			return nil
		}
		st.release()
		return nil
	}
	if err := st.takeMessages(data); err != nil {
		st.failRecv(err)
		return nil
	}
	if end {
		if len(st.partial) > 0 {
			st.failRecv(status.Error(codes.Internal, "the client ended its side in the middle of a message"))
			return nil
		}
		st.mu.Lock()
		st.recvDone = true
		st.mu.Unlock()
		st.signal()
	}
	st.release()
	if st.m.unary == nil || st.dispatched || !(end || st.hasMessage()) {
		return nil
	}
	st.dispatched = true
	if !st.m.inline {
		return st.c.runCall(st.runUnary)
	}
	st.inline = true
	st.runUnary()
	if st.detached {
		return errDetached
	}
	return nil
}

// Detach lets a call that runs on its connection's reader (see
// Options.Inline) wait for something: another goroutine takes over
// reading the connection, so its other calls go on. Calls that run on
// their own goroutine need not call it; for them it does nothing.
func Detach(ctx context.Context) {
	if st := streamOf(ctx); st != nil {
		st.detach()
	}
}

// detach hands reading to another goroutine if the call runs on the
// reader. Only the goroutine running the call may call it.
func (st *stream) detach() {
	if !st.inline || st.detached {
		return
	}
	st.detached = true
	go st.c.read()
	// The answers of the calls this reader ran before are queued, and the
	// reader that takes over flushes only once it has read something.
	st.c.kickWriter()
}

// takeMessages splits data into gRPC messages and queues the complete
// ones; the rest waits in st.partial for the next frame.
func (st *stream) takeMessages(data []byte) error {
	for len(data) > 0 {
		if len(st.partial) == 0 && len(data) >= 5 {
			size, err := st.checkPrefix(data[:5])
			if err != nil {
				return err
			}
			if len(data) >= 5+size { // the whole message is here: one copy
				st.queueMessage(data[0] == 1, data[5:5+size])
				data = data[5+size:]
				continue
			}
		}
		if len(st.partial) < 5 {
			k := min(5-len(st.partial), len(data))
			st.partial = append(st.partial, data[:k]...)
			st.holdPartial(int64(k))
			data = data[k:]
			if len(st.partial) < 5 {
				return nil
			}
			if _, err := st.checkPrefix(st.partial); err != nil {
				return err
			}
		}
		size := int(binary.BigEndian.Uint32(st.partial[1:5]))
		k := min(size+5-len(st.partial), len(data))
		st.partial = append(st.partial, data[:k]...)
		st.holdPartial(int64(k))
		data = data[k:]
		if len(st.partial) < size+5 {
			return nil
		}
		st.holdPartial(-int64(len(st.partial)))
		st.queueMessage(st.partial[0] == 1, st.partial[5:])
		if cap(st.partial) > maxKeptPartial {
			st.partial = nil
		} else {
			st.partial = st.partial[:0]
		}
	}
	return nil
}

// maxKeptPartial is the largest assembly buffer a stream keeps for its
// next message.
const maxKeptPartial = 64 << 10

// queueMessage copies a received message for the handler.
func (st *stream) queueMessage(compressed bool, payload []byte) {
	var buf *[]byte
	if st.c.opts.RetainMessages {
		b := bytes.Clone(payload)
		buf = &b
	} else {
		buf = mem.DefaultBufferPool().Get(len(payload))
		copy(*buf, payload)
	}
	st.mu.Lock()
	st.msgs = append(st.msgs, inMsg{buf: buf, compressed: compressed})
	st.queued += len(payload)
	counted := !st.gone
	st.mu.Unlock()
	if counted {
		st.c.addHeld(int64(len(payload)))
	}
	st.signal()
}

// checkPrefix checks the flag and length of a message's 5-byte prefix
// and returns the length.
func (st *stream) checkPrefix(p []byte) (int, error) {
	switch p[0] {
	case 0:
	case 1:
		if !st.gzip {
			return 0, status.Error(codes.Internal, "message flagged compressed without a grpc-encoding")
		}
	default:
		return 0, status.Errorf(codes.Internal, "bad message flag %d", p[0])
	}
	size := binary.BigEndian.Uint32(p[1:5])
	if int64(size) > int64(st.c.opts.MaxRecvMsgSize) {
		return 0, status.Errorf(codes.ResourceExhausted, "received message of %d bytes, more than the %d allowed", size, st.c.opts.MaxRecvMsgSize)
	}
	return int(size), nil
}

func (st *stream) hasMessage() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.msgs) > 0
}

func (st *stream) signal() {
	select {
	case st.notify <- struct{}{}:
	default:
	}
}

// release credits the client with what it sent, unless more than half a
// window of messages waits for the handler: then reading them releases it.
func (st *stream) release() {
	st.mu.Lock()
	var incr int64
	if st.unreleased >= int64(st.c.opts.WindowSize)/4 && st.queued <= int(st.c.opts.WindowSize)/2 && !st.recvDone {
		incr = st.unreleased
		st.unreleased = 0
		st.recvWin += incr
	}
	st.mu.Unlock()
	if incr > 0 {
		id := st.id
		st.c.queue(func(b []byte) []byte { return appendWindowUpdate(b, id, uint32(incr)) })
	}
}

// failRecv ends a call whose client sent something it must not: the
// call ends with err, and what else the client sends is dropped.
func (st *stream) failRecv(err error) {
	st.mu.Lock()
	if st.recvErr == nil {
		st.recvErr = err
	}
	st.mu.Unlock()
	st.signal()
	st.dispatched = true // a unary call that has not started never will
	st.finish(nil, err)
}

// abort ends a stream the client reset, or whose connection closed.
func (st *stream) abort(err error) {
	st.mu.Lock()
	if st.recvErr == nil {
		st.recvErr = err
	}
	st.mu.Unlock()
	st.releaseHeld()
	st.c.wmu.Lock()
	st.sendDone = true
	st.c.winCond.Broadcast()
	st.c.wmu.Unlock()
	st.cancel()
	st.signal()
}

// next returns the next message the client sent, or io.EOF once it ended
// its side.
func (st *stream) next() (inMsg, error) {
	for {
		st.mu.Lock()
		if len(st.msgs) > 0 {
			m := st.msgs[0]
			st.msgs[0] = inMsg{}
			st.msgs = st.msgs[1:]
			st.queued -= len(*m.buf)
			counted := !st.gone
			st.mu.Unlock()
			if counted {
				st.c.addHeld(-int64(len(*m.buf)))
			}
			st.release()
			return m, nil
		}
		err := st.recvErr
		done := st.recvDone
		st.mu.Unlock()
		if err != nil {
			return inMsg{}, toStatus(err).Err()
		}
		if done {
			return inMsg{}, io.EOF
		}
		select {
		case <-st.notify:
		case <-st.ctx.Done():
			return inMsg{}, toStatus(st.ctx.Err()).Err()
		}
	}
}

// decode decodes m into v and gives its buffer back, unless the decoded
// message may point into it (Options.RetainMessages).
func (st *stream) decode(m inMsg, v any) error {
	if !st.c.opts.RetainMessages {
		defer mem.DefaultBufferPool().Put(m.buf)
	}
	data := *m.buf
	if m.compressed {
		var err error
		if data, err = gunzip(data, st.c.opts.MaxRecvMsgSize); err != nil {
			return status.Errorf(codes.Internal, "grpc: decompressing a message: %v", err)
		}
	}
	if err := st.c.opts.Codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, v); err != nil {
		return status.Errorf(codes.Internal, "grpc: error unmarshalling request: %v", err)
	}
	return nil
}

// runUnary runs a unary call on a worker.
func (st *stream) runUnary() {
	defer st.cancel()
	dec := func(v any) error {
		m, err := st.next()
		if err == io.EOF {
			return status.Error(codes.Internal, "grpc: the request has no message")
		}
		if err != nil {
			return err
		}
		return st.decode(m, v)
	}
	var resp any
	err := st.recovered(func() (err error) {
		resp, err = st.m.unary.Handler(st.m.impl, st.ctx, dec, st.c.opts.UnaryInterceptor)
		return err
	})
	st.finish(resp, err)
}

// runStream runs a streaming call on a worker.
func (st *stream) runStream() {
	defer st.cancel()
	d := st.m.stream
	err := st.recovered(func() error {
		if si := st.c.opts.StreamInterceptor; si != nil {
			info := &grpc.StreamServerInfo{FullMethod: st.m.name, IsClientStream: d.ClientStreams, IsServerStream: d.ServerStreams}
			return si(st.m.impl, st, info, d.Handler)
		}
		return d.Handler(st.m.impl, st)
	})
	st.finish(nil, err)
}

// recovered runs a call's handler. A handler that panics fails its call
// with INTERNAL and is logged with its stack; the server and the
// connection's other calls go on.
func (st *stream) recovered(handler func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			st.c.opts.Logger.Error("grpc handler panicked", "method", st.m.name, "panic", p, "stack", string(debug.Stack()))
			err = status.Errorf(codes.Internal, "handler panic: %v", p)
		}
	}()
	return handler()
}

// finish sends a unary call's answer (resp, when err is nil) and the
// status, and forgets the stream.
func (st *stream) finish(resp any, err error) {
	var payload mem.BufferSlice
	if err == nil && resp != nil {
		if payload, err = st.c.opts.Codec.Marshal(resp); err != nil {
			err = status.Errorf(codes.Internal, "grpc: error while marshaling: %v", err)
		}
	}
	defer payload.Free()
	st.mu.Lock()
	clientOpen := !st.recvDone
	st.mu.Unlock()
	c := st.c
	c.wmu.Lock()
	if !st.sendDone && !c.wclosed {
		if payload != nil {
			if werr := st.writeMessageLocked(payload); werr != nil {
				err = werr
			}
		}
		if !st.sendDone && !c.wclosed {
			st.sendDone = true
			c.appendTrailers(st, toStatus(err))
			if clientOpen {
				c.appendResetLocked(st.id, http2.ErrCodeNo)
			}
		}
	}
	c.wmu.Unlock()
	if !st.inline || st.detached {
		c.kickWriter() // an inline call's reader flushes once it has read all
	}
	c.removeStream(st.id)
	st.dropReceived()
}

// dropReceived gives back the buffers of messages the handler never read.
func (st *stream) dropReceived() {
	st.releaseHeld()
	st.mu.Lock()
	msgs := st.msgs
	st.msgs = nil
	st.queued = 0
	st.mu.Unlock()
	if st.c.opts.RetainMessages {
		return
	}
	for _, m := range msgs {
		mem.DefaultBufferPool().Put(m.buf)
	}
}

// toStatus turns an error into the status the client gets.
func toStatus(err error) *status.Status {
	if err == nil {
		return okStatus
	}
	if s, ok := status.FromError(err); ok {
		return s
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.New(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.New(codes.DeadlineExceeded, err.Error())
	}
	return status.New(codes.Unknown, err.Error())
}

// okStatus is the status of a call that succeeded; it is only read.
var okStatus = status.New(codes.OK, "")

// errResetByClient is the error of a call the client reset.
func errResetByClient(code http2.ErrCode) error {
	return status.Errorf(codes.Canceled, "the client reset the call (%v)", code)
}

// writeHeadersLocked queues the response headers. c.wmu is held.
func (st *stream) writeHeadersLocked() {
	c := st.c
	c.hbuf.Reset()
	c.henc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	c.henc.WriteField(hpack.HeaderField{Name: "content-type", Value: contentTypeGRPC})
	c.encodeMD(st.header)
	c.wbuf = appendHeaderBlock(c.wbuf, st.id, c.hbuf.Bytes(), false, c.peerMaxFrame)
	st.headerSent = true
	st.header = nil
}

// appendTrailers queues a call's status: trailers after its headers, or
// a trailers-only answer. c.wmu is held.
func (c *conn) appendTrailers(st *stream, s *status.Status) {
	if !st.headerSent {
		c.appendTrailersOnly(st.id, 200, s, metadata.Join(st.header, st.trailer))
		return
	}
	c.hbuf.Reset()
	c.encodeStatus(s)
	c.encodeMD(st.trailer)
	c.wbuf = appendHeaderBlock(c.wbuf, st.id, c.hbuf.Bytes(), true, c.peerMaxFrame)
}

// appendTrailersOnly queues an answer that is only a status. c.wmu is held.
func (c *conn) appendTrailersOnly(id uint32, httpStatus int, s *status.Status, md metadata.MD) {
	c.hbuf.Reset()
	c.henc.WriteField(hpack.HeaderField{Name: ":status", Value: httpStatusText(httpStatus)})
	c.henc.WriteField(hpack.HeaderField{Name: "content-type", Value: contentTypeGRPC})
	c.encodeStatus(s)
	c.encodeMD(md)
	c.wbuf = appendHeaderBlock(c.wbuf, id, c.hbuf.Bytes(), true, c.peerMaxFrame)
}

func httpStatusText(code int) string {
	switch code {
	case 200:
		return "200"
	case 405:
		return "405"
	case 415:
		return "415"
	case 431:
		return "431"
	}
	return fmt.Sprint(code)
}

// encodeStatus HPACK-encodes grpc-status, grpc-message and the details.
func (c *conn) encodeStatus(s *status.Status) {
	c.henc.WriteField(hpack.HeaderField{Name: headerStatus, Value: statusCodeText(s.Code())})
	if s.Code() == codes.OK {
		return // no message, no details
	}
	if msg := s.Message(); msg != "" {
		c.henc.WriteField(hpack.HeaderField{Name: headerMessage, Value: encodeGRPCMessage(msg)})
	}
	if p := s.Proto(); len(p.GetDetails()) > 0 { // Proto copies; failures only
		if b, err := marshalStatus(p); err == nil {
			c.henc.WriteField(hpack.HeaderField{Name: headerDetails, Value: encodeBinHeader(string(b))})
		}
	}
}

var statusCodes = func() (t [17]string) {
	for i := range t {
		t[i] = fmt.Sprint(i)
	}
	return t
}()

func statusCodeText(c codes.Code) string {
	if int(c) < len(statusCodes) {
		return statusCodes[c]
	}
	return fmt.Sprint(uint32(c))
}

// encodeMD HPACK-encodes metadata the handler set.
func (c *conn) encodeMD(md metadata.MD) {
	for k, vs := range md {
		if reservedHeader(k) || connectionHeader(k) || len(k) == 0 || k[0] == ':' {
			continue
		}
		bin := len(k) > 4 && k[len(k)-4:] == "-bin"
		for _, v := range vs {
			if bin {
				v = encodeBinHeader(v)
			}
			c.henc.WriteField(hpack.HeaderField{Name: k, Value: v})
		}
	}
}

// writeMessageLocked queues one message in DATA frames as the windows
// allow, waiting for the client to grant more. c.wmu is held, and
// released while waiting.
func (st *stream) writeMessageLocked(payload mem.BufferSlice) error {
	c := st.c
	if !st.headerSent {
		st.writeHeadersLocked()
	}
	var prefix [5]byte
	total := payload.Len()
	appendMessagePrefix(prefix[:0], total)
	rest := 5 + total
	part, partIdx, off := prefix[:], -1, 0
	var stopWake func() bool
	var stall *time.Timer
	defer func() {
		if stopWake != nil {
			stopWake()
		}
		if stall != nil {
			stall.Stop()
		}
	}()
	var waitSince time.Time
	for rest > 0 {
		for c.sendWin <= 0 || st.sendWin <= 0 || len(c.wbuf) >= maxQueuedWrite {
			if st.sendDone || c.wclosed {
				return status.Error(codes.Canceled, "the call ended while sending")
			}
			if err := st.ctx.Err(); err != nil {
				return toStatus(err).Err()
			}
			if stopWake == nil {
				stopWake = context.AfterFunc(st.ctx, func() {
					c.wmu.Lock()
					c.winCond.Broadcast()
					c.wmu.Unlock()
				})
			}
			timeout := c.opts.StallTimeout
			switch {
			case waitSince.IsZero():
				waitSince = time.Now()
				if stall == nil {
					stall = time.AfterFunc(timeout, func() {
						c.wmu.Lock()
						c.winCond.Broadcast()
						c.wmu.Unlock()
					})
				} else {
					stall.Reset(timeout)
				}
			case time.Since(waitSince) >= timeout:
				// The client takes nothing: the call ends, and so does
				// what it had queued for the client.
				st.sendDone = true
				c.appendResetLocked(st.id, http2.ErrCodeCancel)
				st.cancel()
				return status.Errorf(codes.Unavailable, "the client took nothing for %v", timeout)
			}
			st.detach()    // the reader must read on for the client's credit to arrive
			c.kickWriter() // and what is queued must go out for the client to grant it
			c.winCond.Wait()
		}
		waitSince = time.Time{}
		if st.sendDone || c.wclosed {
			return status.Error(codes.Canceled, "the call ended while sending")
		}
		n := min(int64(rest), c.sendWin, st.sendWin, int64(c.peerMaxFrame))
		c.wbuf = appendFrameHeader(c.wbuf, int(n), http2.FrameData, 0, st.id)
		c.sendWin -= n
		st.sendWin -= n
		rest -= int(n)
		for n > 0 {
			if off == len(part) {
				partIdx++
				part, off = payload[partIdx].ReadOnlyData(), 0
				continue
			}
			k := min(int(n), len(part)-off)
			c.wbuf = append(c.wbuf, part[off:off+k]...)
			off += k
			n -= int64(k)
		}
	}
	return nil
}

// SendMsg sends one message of a streaming call.
func (st *stream) SendMsg(m any) error {
	if err := st.ctx.Err(); err != nil {
		return toStatus(err).Err()
	}
	payload, err := st.c.opts.Codec.Marshal(m)
	if err != nil {
		return status.Errorf(codes.Internal, "grpc: error while marshaling: %v", err)
	}
	defer payload.Free()
	c := st.c
	c.wmu.Lock()
	if st.sendDone || c.wclosed {
		c.wmu.Unlock()
		return status.Error(codes.Canceled, "the call has ended")
	}
	err = st.writeMessageLocked(payload)
	c.wmu.Unlock()
	if !st.corked {
		c.kickWriter()
	}
	return err
}

// Cork holds back the messages a streaming call sends until Uncork or
// the end of the call, so that messages sent in a row (and the call's
// status after them) leave in one write instead of one each. The call's
// goroutine must call Uncork before it waits for anything. Outside a call
// of this package's server it does nothing.
func Cork(ctx context.Context) {
	if st := streamOf(ctx); st != nil {
		st.corked = true
	}
}

// Uncork lets what Cork held back go out.
func Uncork(ctx context.Context) {
	if st := streamOf(ctx); st != nil && st.corked {
		st.corked = false
		st.c.kickWriter()
	}
}

// IncomingHeader returns the first value of the request header key
// (lower case) of the call of ctx, as metadata.ValueFromIncomingContext
// does, but without copying it or, when it is absent, comparing key
// with every header; ok is false when this package's server does not
// run the call (use the metadata package then).
func IncomingHeader(ctx context.Context, key string) (value string, ok bool) {
	st := streamOf(ctx)
	if st == nil {
		return "", false
	}
	if v := st.md[key]; len(v) > 0 {
		return v[0], true
	}
	return "", true
}

// streamOf returns the call of ctx, if this package's server runs it.
func streamOf(ctx context.Context) *stream {
	ts, ok := grpc.ServerTransportStreamFromContext(ctx).(*transportStream)
	if !ok {
		return nil
	}
	return (*stream)(ts)
}

// RecvMsg receives the next message of a streaming call into m; io.EOF
// once the client has ended its side.
func (st *stream) RecvMsg(m any) error {
	msg, err := st.next()
	if err != nil {
		return err
	}
	return st.decode(msg, m)
}

// Context returns the call's context.
func (st *stream) Context() context.Context { return st.ctx }

// transportStream is a stream as grpc.SetHeader, grpc.SendHeader,
// grpc.SetTrailer and grpc.Method find it in a call's context.
type transportStream stream

// Method returns the call's full method name.
func (t *transportStream) Method() string { return t.m.name }

// SetHeader adds to the headers sent before the first message.
func (t *transportStream) SetHeader(md metadata.MD) error { return (*stream)(t).SetHeader(md) }

// SendHeader sends the headers now, with md added.
func (t *transportStream) SendHeader(md metadata.MD) error { return (*stream)(t).SendHeader(md) }

// SetTrailer adds to the trailers sent with the status.
func (t *transportStream) SetTrailer(md metadata.MD) error {
	st := (*stream)(t)
	st.c.wmu.Lock()
	defer st.c.wmu.Unlock()
	if st.sendDone {
		return status.Error(codes.Internal, "transport: the call has ended")
	}
	st.trailer = metadata.Join(st.trailer, md)
	return nil
}

// SetHeader adds to the headers sent before the first message.
func (st *stream) SetHeader(md metadata.MD) error {
	st.c.wmu.Lock()
	defer st.c.wmu.Unlock()
	if st.headerSent || st.sendDone {
		return status.Error(codes.Internal, "transport: the headers were already sent")
	}
	st.header = metadata.Join(st.header, md)
	return nil
}

// SendHeader sends the headers now, with md added.
func (st *stream) SendHeader(md metadata.MD) error {
	c := st.c
	c.wmu.Lock()
	if st.headerSent || st.sendDone || c.wclosed {
		c.wmu.Unlock()
		return status.Error(codes.Internal, "transport: the headers were already sent")
	}
	st.header = metadata.Join(st.header, md)
	st.writeHeadersLocked()
	c.wmu.Unlock()
	c.kickWriter()
	return nil
}

// SetTrailer adds to the trailers sent with the status; once the call
// has ended it does nothing.
func (st *stream) SetTrailer(md metadata.MD) { _ = (*transportStream)(st).SetTrailer(md) }
