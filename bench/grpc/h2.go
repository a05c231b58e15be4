package grpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"

	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"
)

// h2Channel is the generator's own gRPC client: HTTP/2 with prior
// knowledge, frames decoded by golang.org/x/net/http2, a call written in
// one system call by the goroutine making it, and answers scanned by the
// connection's reader straight from the frames that carry them. It does
// what the generator needs and no more: unary calls, server streams and
// one long-lived bidirectional stream (telemetry), fixed windows, no
// compression, no retries. It is what `--client karman` measures with,
// as the remoting generator uses Karman's own remoting client;
// `--client grpc-go` uses grpc-go instead.
type h2Channel struct {
	nc        net.Conn
	authority string
	md        metadata.MD

	wmu     sync.Mutex
	wbuf    []byte
	henc    *hpack.Encoder
	hbuf    bytes.Buffer
	nextID  uint32
	sendWin int64 // the server's window for the connection
	initWin int64 // the server's SETTINGS_INITIAL_WINDOW_SIZE
	maxFrm  int
	winCond *sync.Cond

	mu      sync.Mutex
	streams map[uint32]*h2Stream
	err     error // why the connection failed

	// Used by the reader only.
	fr       *http2.Framer
	hdec     *hpack.Decoder
	hblock   []byte // a header block spanning frames
	hstream  uint32 // the stream of the header block being read
	hend     bool   // its HEADERS frame ended the stream
	hstatus  string // grpc-status, grpc-message and :status of the block
	hmessage string
	hhttp    string
	unacked  int64 // connection bytes received since the last WINDOW_UPDATE
	readDone chan struct{}
}

// h2Stream is one call in flight.
type h2Stream struct {
	id      uint32
	onMsg   func([]byte) error // runs on the reader
	partial []byte
	unacked int64 // bytes received since the last stream WINDOW_UPDATE
	sendWin int64 // guarded by wmu
	err     error
	done    chan struct{}
}

func dialH2(ctx context.Context, addr string, md metadata.MD) (*h2Channel, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("grpc bench: %w", err)
	}
	c := &h2Channel{
		nc:        nc,
		authority: addr,
		md:        md,
		nextID:    1,
		sendWin:   65535,
		initWin:   65535,
		maxFrm:    16384,
		streams:   make(map[uint32]*h2Stream),
		readDone:  make(chan struct{}),
	}
	c.henc = hpack.NewEncoder(&c.hbuf)
	c.winCond = sync.NewCond(&c.wmu)
	c.fr = http2.NewFramer(nil, bufio.NewReaderSize(nc, 64<<10))
	c.fr.SetReuseFrames()
	c.hdec = hpack.NewDecoder(4096, c.field)
	b := append([]byte(nil), http2.ClientPreface...)
	b = h2Frame(b, http2.FrameSettings, 0, 0, 12, func(p []byte) {
		binary.BigEndian.PutUint16(p[0:], uint16(http2.SettingEnablePush))
		binary.BigEndian.PutUint32(p[2:], 0)
		binary.BigEndian.PutUint16(p[6:], uint16(http2.SettingInitialWindowSize))
		binary.BigEndian.PutUint32(p[8:], windowSize)
	})
	b = h2WindowUpdate(b, 0, connWindowSize-65535)
	if _, err := nc.Write(b); err != nil {
		nc.Close()
		return nil, fmt.Errorf("grpc bench: %w", err)
	}
	go c.readLoop()
	return c, nil
}

// h2Frame appends a frame whose payload of n bytes fill writes.
func h2Frame(b []byte, t http2.FrameType, flags http2.Flags, id uint32, n int, fill func([]byte)) []byte {
	b = append(b, byte(n>>16), byte(n>>8), byte(n), byte(t), byte(flags), byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
	start := len(b)
	b = append(b, make([]byte, n)...)
	if fill != nil {
		fill(b[start:])
	}
	return b
}

func h2WindowUpdate(b []byte, id, incr uint32) []byte {
	return h2Frame(b, http2.FrameWindowUpdate, 0, id, 4, func(p []byte) { binary.BigEndian.PutUint32(p, incr) })
}

// invoke makes a unary call.
func (c *h2Channel) invoke(ctx context.Context, method string, req *encoded, resp scanner) error {
	return c.call(ctx, method, req, true, resp.scan)
}

// serverStream makes a server-streaming call, scanning every answer.
func (c *h2Channel) serverStream(ctx context.Context, method string, req *encoded, resp scanner) error {
	return c.call(ctx, method, req, true, resp.scan)
}

// call sends req on a new stream (ending the client's side if end) and
// waits until the server ends the call, or ctx.
func (c *h2Channel) call(ctx context.Context, method string, req *encoded, end bool, onMsg func([]byte) error) error {
	st, err := c.open(method, req, end, onMsg)
	if err != nil {
		return err
	}
	select {
	case <-st.done:
		return st.err
	case <-ctx.Done():
		c.cancel(st)
		return ctx.Err()
	}
}

// open starts a call: HEADERS and the request in one write.
func (c *h2Channel) open(method string, req *encoded, end bool, onMsg func([]byte) error) (*h2Stream, error) {
	st := &h2Stream{onMsg: onMsg, done: make(chan struct{})}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	st.id = c.nextID
	c.nextID += 2
	st.sendWin = c.initWin
	c.streams[st.id] = st
	c.mu.Unlock()

	c.hbuf.Reset()
	for _, f := range [...][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", method}, {":authority", c.authority}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		c.henc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	for k, vs := range c.md {
		for _, v := range vs {
			c.henc.WriteField(hpack.HeaderField{Name: k, Value: v})
		}
	}
	block := c.hbuf.Bytes()
	b := c.wbuf[:0]
	b = h2Frame(b, http2.FrameHeaders, http2.FlagHeadersEndHeaders, st.id, len(block), func(p []byte) { copy(p, block) })
	size := 0
	for _, p := range req.parts {
		size += len(p)
	}
	if n := 5 + size; n <= c.maxFrm && int64(n) <= c.sendWin && int64(n) <= st.sendWin {
		// The usual case: the request fits one frame and the windows.
		var flags http2.Flags
		if end {
			flags = http2.FlagDataEndStream
		}
		b = append(b, byte(n>>16), byte(n>>8), byte(n), byte(http2.FrameData), byte(flags), byte(st.id>>24), byte(st.id>>16), byte(st.id>>8), byte(st.id))
		b = append(b, 0, byte(size>>24), byte(size>>16), byte(size>>8), byte(size))
		for _, p := range req.parts {
			b = append(b, p...)
		}
		c.sendWin -= int64(n)
		st.sendWin -= int64(n)
		c.wbuf = b
		if _, err := c.nc.Write(b); err != nil {
			return nil, c.fail(err)
		}
		return st, nil
	}
	msg := make([]byte, 0, 5+size)
	msg = append(msg, 0, byte(size>>24), byte(size>>16), byte(size>>8), byte(size))
	for _, p := range req.parts {
		msg = append(msg, p...)
	}
	for len(msg) > 0 || end {
		for c.sendWin <= 0 || st.sendWin <= 0 {
			if err := c.failed(); err != nil {
				return nil, err
			}
			if _, err := c.nc.Write(b); err != nil {
				return nil, c.fail(err)
			}
			b = b[:0]
			c.winCond.Wait()
		}
		n := min(len(msg), int(c.sendWin), int(st.sendWin), c.maxFrm)
		var flags http2.Flags
		if n == len(msg) && end {
			flags = http2.FlagDataEndStream
			end = false
		}
		b = h2Frame(b, http2.FrameData, flags, st.id, n, func(p []byte) { copy(p, msg[:n]) })
		msg = msg[n:]
		c.sendWin -= int64(n)
		st.sendWin -= int64(n)
	}
	c.wbuf = b
	if _, err := c.nc.Write(b); err != nil {
		return nil, c.fail(err)
	}
	return st, nil
}

// telemetry opens a bidirectional stream that stays open, with first as
// its first message, and waits for the server's first answer.
func (c *h2Channel) telemetry(ctx context.Context, first *encoded, resp scanner) error {
	got := make(chan error, 1)
	answered := false
	st, err := c.open(rmqpb.MessagingService_Telemetry_FullMethodName, first, false, func(b []byte) error {
		if !answered {
			answered = true
			got <- resp.scan(b)
		}
		return nil
	})
	if err != nil {
		return err
	}
	select {
	case err := <-got:
		return err
	case <-st.done:
		return st.err
	case <-ctx.Done():
		return errors.New("the server did not answer the client's settings")
	}
}

// cancel resets a call the caller gave up on.
func (c *h2Channel) cancel(st *h2Stream) {
	c.mu.Lock()
	delete(c.streams, st.id)
	c.mu.Unlock()
	c.write(func(b []byte) []byte {
		return h2Frame(b, http2.FrameRSTStream, 0, st.id, 4, func(p []byte) { binary.BigEndian.PutUint32(p, uint32(http2.ErrCodeCancel)) })
	})
}

// write writes frames built by fn.
func (c *h2Channel) write(fn func([]byte) []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	b := fn(c.wbuf[:0])
	c.wbuf = b
	if _, err := c.nc.Write(b); err != nil {
		c.fail(err)
	}
}

func (c *h2Channel) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// fail ends the connection and every call on it with err.
func (c *h2Channel) fail(err error) error {
	c.mu.Lock()
	if c.err == nil {
		c.err = fmt.Errorf("grpc bench: connection: %w", err)
	}
	err = c.err
	streams := c.streams
	c.streams = map[uint32]*h2Stream{}
	c.mu.Unlock()
	c.nc.Close()
	for _, st := range streams {
		st.err = err
		close(st.done)
	}
	return err
}

func (c *h2Channel) close() {
	c.fail(errors.New("closed"))
	<-c.readDone
}

// readLoop reads frames until the connection fails.
func (c *h2Channel) readLoop() {
	defer close(c.readDone)
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.fail(err)
			return
		}
		if err := c.handle(f); err != nil {
			c.fail(err)
			return
		}
	}
}

func (c *h2Channel) stream(id uint32) *h2Stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.streams[id]
}

func (c *h2Channel) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.DataFrame:
		n := int64(f.Header().Length)
		c.unacked += n
		if c.unacked >= connWindowSize/4 {
			incr := uint32(c.unacked)
			c.unacked = 0
			c.write(func(b []byte) []byte { return h2WindowUpdate(b, 0, incr) })
		}
		if st := c.stream(f.StreamID); st != nil {
			if err := st.take(f.Data()); err != nil {
				st.err = err
				c.finish(st)
				return nil
			}
			st.unacked += n
			if st.unacked >= windowSize/4 {
				incr := uint32(st.unacked)
				st.unacked = 0
				c.write(func(b []byte) []byte { return h2WindowUpdate(b, st.id, incr) })
			}
		}
	case *http2.HeadersFrame:
		c.hstream, c.hend, c.hblock = f.StreamID, f.StreamEnded(), c.hblock[:0]
		return c.headerFragment(f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.ContinuationFrame:
		return c.headerFragment(f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.RSTStreamFrame:
		if st := c.stream(f.StreamID); st != nil {
			st.err = fmt.Errorf("grpc bench: the server reset the call: %v", f.ErrCode)
			c.finish(st)
		}
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		c.wmu.Lock()
		f.ForeachSetting(func(s http2.Setting) error {
			switch s.ID {
			case http2.SettingInitialWindowSize:
				delta := int64(s.Val) - c.initWin
				c.initWin = int64(s.Val)
				c.mu.Lock()
				for _, st := range c.streams {
					st.sendWin += delta
				}
				c.mu.Unlock()
			case http2.SettingMaxFrameSize:
				c.maxFrm = int(s.Val)
			}
			return nil
		})
		c.winCond.Broadcast()
		c.wmu.Unlock()
		c.write(func(b []byte) []byte { return h2Frame(b, http2.FrameSettings, http2.FlagSettingsAck, 0, 0, nil) })
	case *http2.WindowUpdateFrame:
		c.wmu.Lock()
		if f.StreamID == 0 {
			c.sendWin += int64(f.Increment)
		} else if st := c.stream(f.StreamID); st != nil {
			st.sendWin += int64(f.Increment)
		}
		c.winCond.Broadcast()
		c.wmu.Unlock()
	case *http2.PingFrame:
		if !f.IsAck() {
			data := f.Data
			c.write(func(b []byte) []byte {
				return h2Frame(b, http2.FramePing, http2.FlagPingAck, 0, 8, func(p []byte) { copy(p, data[:]) })
			})
		}
	case *http2.GoAwayFrame:
		return fmt.Errorf("the server sent GOAWAY (%v)", f.ErrCode)
	}
	return nil
}

// finish ends a call.
func (c *h2Channel) finish(st *h2Stream) {
	c.mu.Lock()
	_, open := c.streams[st.id]
	delete(c.streams, st.id)
	c.mu.Unlock()
	if open {
		close(st.done)
	}
}

// take splits data into messages and scans each.
func (st *h2Stream) take(data []byte) error {
	for len(data) > 0 {
		if len(st.partial) == 0 && len(data) >= 5 {
			size := int(binary.BigEndian.Uint32(data[1:5]))
			if len(data) >= 5+size {
				if err := st.onMsg(data[5 : 5+size]); err != nil {
					return err
				}
				data = data[5+size:]
				continue
			}
		}
		if len(st.partial) < 5 {
			k := min(5-len(st.partial), len(data))
			st.partial = append(st.partial, data[:k]...)
			data = data[k:]
			if len(st.partial) < 5 {
				return nil
			}
		}
		size := int(binary.BigEndian.Uint32(st.partial[1:5]))
		k := min(5+size-len(st.partial), len(data))
		st.partial = append(st.partial, data[:k]...)
		data = data[k:]
		if len(st.partial) < 5+size {
			return nil
		}
		if err := st.onMsg(st.partial[5:]); err != nil {
			return err
		}
		st.partial = st.partial[:0]
	}
	return nil
}

// headerFragment takes a fragment of a header block; once the block is
// whole it is decoded, and if it ends its call (trailers, or an answer
// that is only a status) the call ends with the status it carries.
func (c *h2Channel) headerFragment(frag []byte, ended bool) error {
	if !ended || len(c.hblock) > 0 {
		c.hblock = append(c.hblock, frag...)
		if !ended {
			return nil
		}
		frag = c.hblock
	}
	c.hstatus, c.hmessage, c.hhttp = "", "", ""
	if _, err := c.hdec.Write(frag); err != nil {
		return err
	}
	if err := c.hdec.Close(); err != nil {
		return err
	}
	if !c.hend {
		return nil // the answer's headers
	}
	if st := c.stream(c.hstream); st != nil {
		st.err = c.status()
		c.finish(st)
	}
	return nil
}

// field keeps the fields of a header block the client acts on.
func (c *h2Channel) field(f hpack.HeaderField) {
	switch f.Name {
	case "grpc-status":
		c.hstatus = f.Value
	case "grpc-message":
		c.hmessage = f.Value
	case ":status":
		c.hhttp = f.Value
	}
}

// status is the call status of the trailers just decoded.
func (c *h2Channel) status() error {
	if c.hstatus == "0" {
		return nil
	}
	n, err := strconv.Atoi(c.hstatus)
	if err != nil {
		return fmt.Errorf("grpc bench: the call ended without a status (HTTP %s)", c.hhttp)
	}
	msg, err := url.PathUnescape(c.hmessage) // grpc-message is percent-encoded
	if err != nil {
		msg = c.hmessage
	}
	return grpcstatus.Error(codes.Code(n), msg)
}
