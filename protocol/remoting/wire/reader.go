package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"sync/atomic"
)

// readBufferSize is the size of the Reader's input buffer.
const readBufferSize = 64 << 10

// Reader reads frames from a byte stream. After an error other than io.EOF
// at a frame boundary the stream position is lost and the Reader should
// be discarded together with its connection.
type Reader struct {
	r     *bufio.Reader
	opts  DecodeOptions
	hdr   [4]byte
	spare atomic.Pointer[[]byte] // a frame handed back by Recycle
	// holder is an unused *[]byte for Recycle to hand a frame back in,
	// so that recycling does not allocate one.
	holder  atomic.Pointer[[]byte]
	reserve func(n int) error // see SetReserve
	refused int               // length of the frame ReadFrame last refused as too large
}

// SetReserve makes ReadFrame call reserve with the length of each frame
// (the bytes after its length prefix) once the prefix is read and checked
// and before the frame's memory is taken: reserve may wait (the stream is
// then not read) or fail, and ReadFrame returns its error. Whoever
// reserves gives the bytes back once done with the frame, or when
// ReadFrame fails after reserve returned nil. Call it before reading.
func (r *Reader) SetReserve(reserve func(n int) error) { r.reserve = reserve }

// NewReader returns a Reader that buffers r and decodes with opts.
func NewReader(r io.Reader, opts DecodeOptions) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, readBufferSize), opts: opts}
}

// ReadFrame reads one frame and returns the bytes after its length prefix
// in a newly allocated buffer. It returns io.EOF when the stream ends
// cleanly between frames and io.ErrUnexpectedEOF when it ends inside one;
// a length prefix below 4 fails with ErrMalformed and one above
// MaxFrameSize with ErrFrameTooLarge.
func (r *Reader) ReadFrame() ([]byte, error) {
	if _, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(r.hdr[:]))
	if n < 4 {
		return nil, malformed("frame", 0, "length prefix %d is below the minimum of 4", n)
	}
	if limit := r.opts.maxFrameSize(); int(n) > limit {
		r.refused = int(n)
		return nil, &DecodeError{Kind: ErrFrameTooLarge, Part: "frame", Offset: 0,
			Detail: "length prefix " + itoa(int(n)) + " exceeds the limit of " + itoa(limit)}
	}
	if r.reserve != nil {
		if err := r.reserve(int(n)); err != nil {
			return nil, err
		}
	}
	var buf []byte
	if sp := r.spare.Swap(nil); sp != nil && cap(*sp) >= int(n) {
		buf = (*sp)[:n]
		*sp = nil
		r.holder.Store(sp)
	} else {
		buf = make([]byte, n)
	}
	if _, err := io.ReadFull(r.r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// ReadRefusedHead reads the header of the frame that ReadFrame has just
// refused with ErrFrameTooLarge, when the header takes at most maxHeader
// bytes, and returns it decoded, without its body, together with the
// number of the frame's bytes left unread. Whoever answers the command
// should then close the connection: its body is not read, and skipping
// it would cost as much as reading it.
func (r *Reader) ReadRefusedHead(maxHeader int) (*Command, int, error) {
	n := r.refused
	r.refused = 0
	if n < 4 {
		return nil, 0, malformed("frame", 0, "no frame was refused for its size")
	}
	var word [4]byte
	if _, err := io.ReadFull(r.r, word[:]); err != nil {
		return nil, 0, err
	}
	hlen := int(binary.BigEndian.Uint32(word[:]) & 0xFFFFFF)
	if hlen > maxHeader || hlen > n-4 {
		return nil, n - 4, malformed("frame", 4, "header length %d exceeds %d", hlen, min(maxHeader, n-4))
	}
	frame := make([]byte, 4+hlen)
	copy(frame, word[:])
	if _, err := io.ReadFull(r.r, frame[4:]); err != nil {
		return nil, 0, err
	}
	c, err := r.opts.Decode(frame)
	return c, n - 4 - hlen, err
}

// Discard reads and drops up to n bytes of the stream, and returns how
// many it dropped.
func (r *Reader) Discard(n int) (int, error) { return r.r.Discard(n) }

// Buffered returns how many bytes have been read from the stream but not
// yet returned: zero means the next read waits for the stream.
func (r *Reader) Buffered() int { return r.r.Buffered() }

// ReadCommand reads and decodes one frame.
func (r *Reader) ReadCommand() (*Command, error) {
	frame, err := r.ReadFrame()
	if err != nil {
		return nil, err
	}
	c, err := r.opts.Decode(frame)
	if err == nil {
		c.frame = frame
	}
	return c, err
}

// maxRecycled bounds the frames Recycle keeps for reuse.
const maxRecycled = 64 << 10

// Recycle hands back the memory of a command ReadCommand returned, for
// a later frame to reuse: c's Body and deferred extFields must not be
// used afterwards, by anyone, and c itself must not be decoded again.
// Strings decoded from c stay valid. Recycle is optional, and may be
// called from any goroutine.
func (r *Reader) Recycle(c *Command) {
	if c.frame == nil || cap(c.frame) > maxRecycled {
		return
	}
	p := r.holder.Swap(nil)
	if p == nil {
		p = new([]byte)
	}
	*p = c.frame[:0]
	if buf := c.takePairs(); buf != nil {
		buf.release()
	}
	c.frame, c.Body, c.ext = nil, nil, nil
	r.spare.Store(p)
}
