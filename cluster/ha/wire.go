package ha

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/karmanmq/karman/engine/epoch"
)

// Message types; see the package documentation for their fields.
const (
	typeHello    = 1 // replica → master
	typeWelcome  = 2 // master → replica
	typeRefuse   = 3 // master → replica
	typeAck      = 4 // replica → master
	typeTransfer = 5 // master → replica
	typeMetadata = 6 // master → replica: engine.Metadata as JSON
)

// Version is the protocol version a replica says in its hello.
const Version = 1

// MaxFrames bounds the log bytes one transfer carries; MaxMessage bounds
// a whole message (its 4-byte length excluded).
const (
	MaxFrames  = 4 << 20
	MaxMessage = MaxFrames + 1 + 4 + 8 + 8 + 8
	maxText    = 1024
	maxEpochs  = (MaxMessage - 1 - 24) / 12
)

// ErrProtocol: a message that does not decode. The connection it came on
// is closed.
var ErrProtocol = errors.New("ha: protocol error")

// message is one decoded message; the fields its type uses are set.
type message struct {
	typ byte

	// hello
	version     uint16
	brokerName  string
	replicaID   string
	segmentSize int64

	// welcome
	epochs []epoch.Entry

	// welcome, transfer: the master's end; hello: the replica's end
	end int64

	// refuse
	reason string

	// ack: the replica's end; transfer: where frames start
	offset int64

	// transfer
	epoch  epoch.Entry
	frames []byte

	// metadata: JSON, decoded by the replica
	body []byte
}

func putText(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// encode appends m as a frame (4-byte length, type, body) to b.
func (m *message) encode(b []byte) []byte {
	at := len(b)
	b = append(b, 0, 0, 0, 0, m.typ)
	switch m.typ {
	case typeHello:
		b = binary.BigEndian.AppendUint16(b, m.version)
		b = putText(b, m.brokerName)
		b = putText(b, m.replicaID)
		b = binary.BigEndian.AppendUint64(b, uint64(m.segmentSize))
		b = binary.BigEndian.AppendUint64(b, uint64(m.end))
	case typeWelcome:
		b = binary.BigEndian.AppendUint64(b, uint64(m.segmentSize))
		b = binary.BigEndian.AppendUint64(b, uint64(m.end))
		b = binary.BigEndian.AppendUint32(b, uint32(len(m.epochs)))
		for _, e := range m.epochs {
			b = binary.BigEndian.AppendUint32(b, e.Epoch)
			b = binary.BigEndian.AppendUint64(b, uint64(e.Start))
		}
	case typeRefuse:
		b = putText(b, m.reason)
	case typeAck:
		b = binary.BigEndian.AppendUint64(b, uint64(m.offset))
	case typeTransfer:
		b = binary.BigEndian.AppendUint32(b, m.epoch.Epoch)
		b = binary.BigEndian.AppendUint64(b, uint64(m.epoch.Start))
		b = binary.BigEndian.AppendUint64(b, uint64(m.offset))
		b = binary.BigEndian.AppendUint64(b, uint64(m.end))
		b = append(b, m.frames...)
	case typeMetadata:
		b = append(b, m.body...)
	}
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

// reader decodes the body of one message.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.b) < n {
		r.err = fmt.Errorf("%w: message cut short", ErrProtocol)
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u16() uint16 {
	if v := r.take(2); v != nil {
		return binary.BigEndian.Uint16(v)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if v := r.take(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

// offset reads a non-negative i64.
func (r *reader) offset() int64 {
	v := r.take(8)
	if v == nil {
		return 0
	}
	n := int64(binary.BigEndian.Uint64(v))
	if n < 0 && r.err == nil {
		r.err = fmt.Errorf("%w: negative offset", ErrProtocol)
	}
	return n
}

func (r *reader) text() string {
	n := int(r.u16())
	if n > maxText && r.err == nil {
		r.err = fmt.Errorf("%w: text of %d bytes", ErrProtocol, n)
		return ""
	}
	return string(r.take(n))
}

// decode reads a message body (type byte first). frames alias b. It
// never panics, whatever b holds.
func decode(b []byte) (*message, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty message", ErrProtocol)
	}
	m := &message{typ: b[0]}
	r := reader{b: b[1:]}
	switch m.typ {
	case typeHello:
		m.version = r.u16()
		m.brokerName = r.text()
		m.replicaID = r.text()
		m.segmentSize = r.offset()
		m.end = r.offset()
	case typeWelcome:
		m.segmentSize = r.offset()
		m.end = r.offset()
		n := r.u32()
		if n > maxEpochs || int(n)*12 != len(r.b) {
			if r.err == nil {
				r.err = fmt.Errorf("%w: %d epochs in %d bytes", ErrProtocol, n, len(r.b))
			}
			break
		}
		m.epochs = make([]epoch.Entry, n)
		for i := range m.epochs {
			e := epoch.Entry{Epoch: r.u32(), Start: r.offset()}
			if r.err == nil {
				if err := epoch.Check(m.epochs[:i], e); err != nil {
					r.err = fmt.Errorf("%w: %w", ErrProtocol, err)
				}
			}
			m.epochs[i] = e
		}
	case typeRefuse:
		m.reason = r.text()
	case typeAck:
		m.offset = r.offset()
	case typeTransfer:
		m.epoch = epoch.Entry{Epoch: r.u32(), Start: r.offset()}
		m.offset = r.offset()
		m.end = r.offset()
		m.frames = r.b
		r.b = nil
		if len(m.frames) > MaxFrames && r.err == nil {
			r.err = fmt.Errorf("%w: %d bytes of frames", ErrProtocol, len(m.frames))
		}
		if r.err == nil && (m.epoch.Start > m.offset || m.offset > m.end || int64(len(m.frames)) > m.end-m.offset) {
			r.err = fmt.Errorf("%w: transfer of %d bytes at %d, epoch %d from %d, master end %d", ErrProtocol, len(m.frames), m.offset, m.epoch.Epoch, m.epoch.Start, m.end)
		}
	case typeMetadata:
		m.body = r.b
		r.b = nil
	default:
		return nil, fmt.Errorf("%w: unknown message type %d", ErrProtocol, m.typ)
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%w: %d bytes after a message of type %d", ErrProtocol, len(r.b), m.typ)
	}
	if r.err != nil {
		return nil, r.err
	}
	return m, nil
}

// readMessage reads one message from r into buf (grown as needed) and
// decodes it; the message's frames alias the returned buffer.
func readMessage(r io.Reader, buf []byte) (*message, []byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, buf, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n == 0 || n > MaxMessage {
		return nil, buf, fmt.Errorf("%w: message of %d bytes", ErrProtocol, n)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, buf, err
	}
	m, err := decode(buf)
	return m, buf, err
}
