package peer

import (
	"net"
	"sync"
)

// outbox holds encoded frames until they are written. Whichever goroutine
// finds nobody writing writes everything queued, frames queued while it
// writes included, so frames that arrive together leave in one system
// call: the writer goroutine for requests, the reading goroutine for the
// responses of inline handlers, a handler on its own goroutine for its
// response.
type outbox struct {
	mu      sync.Mutex
	frames  []outFrame // queued, in order
	bytes   int        // in frames
	free    []outFrame // the other half of the double buffer
	writing bool       // a goroutine is writing; it takes what is queued before it stops
	dead    bool       // the connection is shut down: nothing more is queued

	vec     net.Buffers // used by the writing goroutine only
	scratch []byte      // used by the writing goroutine only

	space chan struct{} // a token when a write has made room
	kick  chan struct{} // a token wakes the writer goroutine
}

// outFrame is one queued frame: a pooled buffer, followed on the wire by
// body when the frame's body was lent rather than copied (done is then
// called once it is written).
type outFrame struct {
	buf  *[]byte
	body []byte
	done func()
}

// release recycles f's buffer and hands back its body.
func (f *outFrame) release() {
	putBuf(f.buf)
	if f.done != nil {
		f.done()
	}
	*f = outFrame{}
}

func (o *outbox) init() {
	o.space = make(chan struct{}, 1)
	o.kick = make(chan struct{}, 1)
}

// put queues buf unless limit frames are queued already, and reports
// whether it did. It fails once the connection is shut down.
func (o *outbox) put(buf *[]byte, limit int) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dead {
		return false, ErrClosed
	}
	if len(o.frames) >= limit {
		return false, nil
	}
	o.frames = append(o.frames, outFrame{buf: buf})
	o.bytes += len(*buf)
	if len(o.frames) < limit {
		// Pass on the room to the next waiter, if any.
		select {
		case o.space <- struct{}{}:
		default:
		}
	}
	return true, nil
}

// add queues f whatever is queued already, and returns how many bytes
// are queued. It fails once the connection is shut down.
func (o *outbox) add(f outFrame) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dead {
		return 0, ErrClosed
	}
	o.frames = append(o.frames, f)
	o.bytes += len(*f.buf) + len(f.body)
	return o.bytes, nil
}

func (o *outbox) kickWriter() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// flush writes everything queued to w, unless another goroutine is
// writing already: that one then writes it.
func (o *outbox) flush(w net.Conn) error {
	o.mu.Lock()
	if o.writing || o.dead || len(o.frames) == 0 {
		o.mu.Unlock()
		return nil
	}
	o.writing = true
	for len(o.frames) > 0 && !o.dead {
		frames := o.frames
		o.frames, o.free = o.free[:0], nil
		o.bytes = 0
		o.mu.Unlock()
		err := o.write(w, frames)
		for i := range frames {
			frames[i].release()
		}
		o.mu.Lock()
		o.free = frames[:0]
		select {
		case o.space <- struct{}{}:
		default:
		}
		if err != nil {
			o.writing = false
			o.mu.Unlock()
			return err
		}
	}
	o.writing = false
	o.mu.Unlock()
	return nil
}

// write writes frames to w in one system call where w allows it.
func (o *outbox) write(w net.Conn, frames []outFrame) error {
	if len(frames) == 1 && frames[0].body == nil {
		_, err := w.Write(*frames[0].buf)
		return err
	}
	switch w.(type) {
	case *net.TCPConn, *net.UnixConn:
		v := o.vec[:0]
		for _, f := range frames {
			v = append(v, *f.buf)
			if len(f.body) > 0 {
				v = append(v, f.body)
			}
		}
		o.vec = v
		_, err := v.WriteTo(w) // writev; advances its own copy of v
		clear(o.vec)
		return err
	}
	// Other connections (TLS) would turn every frame into a write of
	// its own.
	b := o.scratch[:0]
	for _, f := range frames {
		b = append(b, *f.buf...)
		b = append(b, f.body...)
	}
	_, err := w.Write(b)
	if cap(b) <= maxPooledBuffer {
		o.scratch = b[:0]
	} else {
		o.scratch = nil
	}
	return err
}

// discard drops what is queued and refuses more: the connection is shut
// down.
func (o *outbox) discard() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.dead = true
	for i := range o.frames {
		o.frames[i].release()
	}
	o.frames = o.frames[:0]
	o.bytes = 0
}
