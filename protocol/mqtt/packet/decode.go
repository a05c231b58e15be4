package packet

import (
	"bufio"
	"errors"
	"io"
	"sync"
)

// fixedFlags is the required low nibble per type; PUBLISH is checked apart.
var fixedFlags = [16]byte{PUBREL: 0x02, SUBSCRIBE: 0x02, UNSUBSCRIBE: 0x02}

// readHeader reads the first byte and the Remaining Length.
func readHeader(r *bufio.Reader, version byte) (first byte, rl, hdrLen int, err error) {
	first, err = r.ReadByte()
	if err != nil {
		return 0, 0, 0, err // io.EOF between packets is a clean end
	}
	mult := 0
	for i := 0; ; i++ {
		if i == 4 {
			return 0, 0, 0, withContext(malformed("remaining length longer than 4 bytes"), Type(first>>4), version)
		}
		c, err := r.ReadByte()
		if err != nil {
			return 0, 0, 0, unexpected(err)
		}
		rl |= int(c&0x7f) << mult
		if c&0x80 == 0 {
			if version == Version5 && i > 0 && c == 0 {
				return 0, 0, 0, withContext(malformed("remaining length not in its shortest form"), Type(first>>4), version)
			}
			return first, rl, 2 + i, nil
		}
		mult += 7
	}
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// checkHeader validates the first byte for version and the size limit.
func checkHeader(first byte, rl, hdrLen int, version byte, maxSize int) error {
	t := Type(first >> 4)
	flags := first & 0x0f
	switch {
	case t == 0:
		return withContext(malformed("packet type 0"), 0, version)
	case version == 0 && t != CONNECT:
		return withContext(protocolErr("first packet is %s, not CONNECT", t), t, version)
	case t == AUTH && version != Version5:
		return withContext(malformed("AUTH before MQTT 5"), t, version)
	case t != PUBLISH && flags != fixedFlags[t]:
		return withContext(malformed("flags 0x%x", flags), t, version)
	}
	if maxSize > 0 && hdrLen+rl > maxSize {
		return &Error{Err: ErrTooLarge, Code: PacketTooLarge, Type: t, Version: version,
			Detail: "packet of " + itoa(hdrLen+rl) + " bytes, limit " + itoa(maxSize)}
	}
	return nil
}

// ReadPacket reads one packet from r and decodes it for version: 0 before
// the CONNECT (only a CONNECT is accepted then, decoded in the level it
// carries), else Version31, Version311 or Version5. maxSize limits the
// whole packet (fixed header included, the MQTT 5 packet size); 0 or less
// means the protocol's limit. The packet owns a fresh buffer: its []byte
// fields stay valid. At a clean end between packets it returns io.EOF;
// inside a packet io.ErrUnexpectedEOF. Decoding errors are *Error.
func ReadPacket(r *bufio.Reader, version byte, maxSize int) (Packet, error) {
	first, rl, hdrLen, err := readHeader(r, version)
	if err != nil {
		return nil, err
	}
	if err := checkHeader(first, rl, hdrLen, version, maxSize); err != nil {
		return nil, err
	}
	body, err := readBody(r, nil, rl)
	if err != nil {
		return nil, err
	}
	return Decode(first, body, version)
}

// readBody reads n bytes into buf (reused when large enough). Large bodies
// grow with the data actually received, so a lying length cannot make the
// reader allocate what the peer never sends.
func readBody(r io.Reader, buf []byte, n int) ([]byte, error) {
	const step = 64 << 10
	if n <= cap(buf) || n <= step {
		if n > cap(buf) {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, unexpected(err)
		}
		return buf, nil
	}
	buf = buf[:0]
	for len(buf) < n {
		m := min(n-len(buf), max(step, len(buf)))
		start := len(buf)
		buf = append(buf, make([]byte, m)...)
		if _, err := io.ReadFull(r, buf[start:]); err != nil {
			return nil, unexpected(err)
		}
	}
	return buf, nil
}

// Decode decodes the body (the bytes after the Remaining Length) of a
// packet whose first byte is first, for version (see ReadPacket). The
// packet's []byte fields alias body. It checks the flags of the first
// byte but no size limit.
func Decode(first byte, body []byte, version byte) (Packet, error) {
	return decode(first, body, version, nil)
}

// reused holds the packets a Decoder with Reuse set decodes into.
type reused struct {
	pub     Publish
	puback  Puback
	pubrec  Pubrec
	pubrel  Pubrel
	pubcomp Pubcomp
}

func decode(first byte, body []byte, version byte, ru *reused) (Packet, error) {
	if err := checkHeader(first, len(body), 0, version, 0); err != nil {
		return nil, err
	}
	t := Type(first >> 4)
	r := &rd{b: body}
	var p Packet
	var err *Error
	switch t {
	case CONNECT:
		c := &Connect{}
		err = decodeConnect(r, c)
		p = c
		if err != nil {
			return nil, withContext(err, t, c.Version)
		}
		return p, nil
	case CONNACK:
		c := &Connack{}
		err, p = decodeConnack(r, c, version), c
	case PUBLISH:
		var c *Publish
		if ru != nil {
			c = &ru.pub
			// The last topic stays as decodePublish's guess: a run of
			// PUBLISH packets to one topic shares its string.
			*c = Publish{Topic: c.Topic}
		} else {
			c = &Publish{}
		}
		err, p = decodePublish(r, c, first&0x0f, version), c
	case PUBACK:
		var c *Puback
		if ru != nil {
			c = &ru.puback
			*c = Puback{}
		} else {
			c = &Puback{}
		}
		err, p = decodeAck(r, t, &c.PacketID, &c.ReasonCode, &c.Properties, version), c
	case PUBREC:
		var c *Pubrec
		if ru != nil {
			c = &ru.pubrec
			*c = Pubrec{}
		} else {
			c = &Pubrec{}
		}
		err, p = decodeAck(r, t, &c.PacketID, &c.ReasonCode, &c.Properties, version), c
	case PUBREL:
		var c *Pubrel
		if ru != nil {
			c = &ru.pubrel
			*c = Pubrel{}
		} else {
			c = &Pubrel{}
		}
		err, p = decodeAck(r, t, &c.PacketID, &c.ReasonCode, &c.Properties, version), c
	case PUBCOMP:
		var c *Pubcomp
		if ru != nil {
			c = &ru.pubcomp
			*c = Pubcomp{}
		} else {
			c = &Pubcomp{}
		}
		err, p = decodeAck(r, t, &c.PacketID, &c.ReasonCode, &c.Properties, version), c
	case SUBSCRIBE:
		c := &Subscribe{}
		err, p = decodeSubscribe(r, c, version), c
	case SUBACK:
		c := &Suback{}
		err, p = decodeSuback(r, c, version), c
	case UNSUBSCRIBE:
		c := &Unsubscribe{}
		err, p = decodeUnsubscribe(r, c, version), c
	case UNSUBACK:
		c := &Unsuback{}
		err, p = decodeUnsuback(r, c, version), c
	case PINGREQ, PINGRESP:
		if len(body) != 0 {
			err = malformed("%d bytes in %s", len(body), t)
		} else if t == PINGREQ {
			p = &Pingreq{}
		} else {
			p = &Pingresp{}
		}
	case DISCONNECT:
		c := &Disconnect{}
		err, p = decodeDisconnect(r, c, version), c
	case AUTH:
		c := &Auth{}
		err, p = decodeCodeAndProps(r, &c.ReasonCode, &c.Properties, &authCodes, ctxAuth), c
	}
	if err != nil {
		return nil, withContext(err, t, version)
	}
	return p, nil
}

// Decoder reads packets from a stream, reusing its buffers: the []byte
// fields of a packet it returns (payloads, passwords, binary properties)
// alias memory that the next Read overwrites. Copy what must outlive the
// next Read; strings are always copies. A Decoder is used by one goroutine.
type Decoder struct {
	r   *bufio.Reader
	buf []byte

	// Version is the protocol level packets are decoded for: 0 until the
	// CONNECT, whose Read sets it to the CONNECT's level.
	Version byte
	// MaxSize limits the packet size as in ReadPacket; 0 means none.
	MaxSize int
	// FromClient makes the decoder refuse, with a protocol error, what
	// only a server sends (CONNACK, SUBACK, UNSUBACK, PINGRESP, and
	// Subscription Identifiers in a PUBLISH) and a second CONNECT.
	FromClient bool
	// Reserve, when set, is called with the size of each body that does
	// not fit in the read buffer, before it is read; its error ends the
	// Read. The release it returns is called at the next Read, once the
	// packet is no longer in use, and the body's buffer is then not kept.
	// A server bounds the memory of the packets its connections hold
	// with it.
	Reserve func(n int) (release func(), err error)
	// Reuse makes Read decode PUBLISH, PUBACK, PUBREC, PUBREL and
	// PUBCOMP into packets the Decoder owns, overwritten by the next
	// Read, instead of allocating each (about 600 bytes with its
	// Properties): for a reader that handles each packet before the next.
	Reuse   bool
	reused  *reused
	release func()

	// Of a parking decoder (NewParkingDecoder): r is nil while parked.
	pool *sync.Pool // of *bufio.Reader of the decoder's size
	pre  prefixed
}

// prefixed reads the bytes a parked decoder read while it waited, then
// from src.
type prefixed struct {
	b      [8]byte
	lo, hi int
	src    io.Reader
}

func (p *prefixed) Read(b []byte) (int, error) {
	if p.lo < p.hi {
		n := copy(b, p.b[p.lo:p.hi])
		p.lo += n
		return n, nil
	}
	return p.src.Read(b)
}

var (
	readerPools sync.Map // read buffer size → *sync.Pool of *bufio.Reader
	reusedPool  = sync.Pool{New: func() any { return new(reused) }}
)

// NewParkingDecoder returns a decoder reading from src through a read
// buffer of size bytes that it takes from a pool shared by the parking
// decoders of that size, and gives back when it parks (Park). A parked
// decoder holds no buffer: its next Read waits for the packet's first
// bytes with a read of at most 8 bytes into an array of its own, then
// takes a read buffer again. So a connection that waits holds a few
// bytes, not a buffer. It starts parked.
func NewParkingDecoder(src io.Reader, size int) *Decoder {
	v, _ := readerPools.LoadOrStore(size, &sync.Pool{New: func() any { return bufio.NewReaderSize(nil, size) }})
	return &Decoder{pool: v.(*sync.Pool), pre: prefixed{src: src}}
}

// Park gives back the buffers of a parking decoder while it waits for
// the next packet: the read buffer, when nothing is buffered, and the
// packets Reuse decodes into (the last packet Read returned must be out
// of use, as for the next Read). It reports whether the decoder is
// parked; a decoder that is not a parking one never is.
func (d *Decoder) Park() bool {
	if d.pool == nil {
		return false
	}
	if d.r != nil && d.r.Buffered() > 0 {
		return false
	}
	d.Release()
	if d.reused != nil {
		reusedPool.Put(d.reused)
		d.reused = nil
	}
	if d.r != nil {
		d.r.Reset(nil)
		d.pool.Put(d.r)
		d.r = nil
	}
	return true
}

// Unpark waits, when the decoder is parked, for the first bytes of the
// next packet and takes a read buffer; the next Read decodes the packet.
// Read unparks by itself: Unpark lets a caller wait in a shallow frame.
func (d *Decoder) Unpark() error {
	if d.r != nil {
		return nil
	}
	for {
		n, err := d.pre.src.Read(d.pre.b[:])
		if n > 0 {
			d.pre.lo, d.pre.hi = 0, n
			break
		}
		if err != nil {
			return err
		}
	}
	d.r = d.pool.Get().(*bufio.Reader)
	d.r.Reset(&d.pre)
	return nil
}

// NewDecoder returns a decoder reading from r, which it wraps in a
// bufio.Reader unless it is one.
func NewDecoder(r io.Reader) *Decoder {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReader(r)
	}
	return &Decoder{r: br}
}

// Release calls the release of the last Reserve, if any: a server calls
// it when it reads no more from the decoder.
func (d *Decoder) Release() {
	if d.release != nil {
		d.release()
		d.release, d.buf = nil, nil
	}
}

// Read reads and decodes the next packet (see ReadPacket for errors).
func (d *Decoder) Read() (Packet, error) {
	d.Release()
	if err := d.Unpark(); err != nil {
		return nil, err
	}
	first, rl, hdrLen, err := readHeader(d.r, d.Version)
	if err != nil {
		return nil, err
	}
	if err := checkHeader(first, rl, hdrLen, d.Version, d.MaxSize); err != nil {
		return nil, err
	}
	var body []byte
	if rl <= d.r.Size() {
		// Small bodies are decoded in place in the bufio buffer, which
		// stays untouched until the next read from it.
		if body, err = d.r.Peek(rl); err != nil {
			return nil, unexpected(err)
		}
		_, _ = d.r.Discard(rl)
	} else {
		if d.Reserve != nil {
			if d.release, err = d.Reserve(rl); err != nil {
				d.release = nil
				return nil, err
			}
		}
		if body, err = readBody(d.r, d.buf, rl); err != nil {
			return nil, err
		}
		d.buf = body
	}
	var ru *reused
	if t := Type(first >> 4); d.Reuse && t >= PUBLISH && t <= PUBCOMP {
		if d.reused == nil {
			d.reused = reusedPool.Get().(*reused)
		}
		ru = d.reused
	}
	p, err := decode(first, body, d.Version, ru)
	if err != nil {
		return nil, err
	}
	if d.FromClient {
		if err := CheckFromClient(p, d.Version); err != nil {
			return nil, err
		}
	}
	if c, ok := p.(*Connect); ok && d.Version == 0 {
		d.Version = c.Version
	}
	return p, nil
}

// CheckFromClient returns a protocol error for a packet a client must not
// send to a server that negotiated version (0 before the CONNECT).
func CheckFromClient(p Packet, version byte) error {
	t := p.Type()
	switch t {
	case CONNACK, SUBACK, UNSUBACK, PINGRESP:
		return withContext(protocolErr("sent by a client"), t, version)
	case CONNECT:
		if version != 0 {
			return withContext(protocolErr("second CONNECT"), t, version)
		}
	case PUBLISH:
		if len(p.(*Publish).Properties.SubscriptionIdentifiers) > 0 {
			return withContext(protocolErr("subscription identifier from a client"), t, version)
		}
	}
	return nil
}

// CheckFromServer returns a protocol error for a packet a server must not
// send to a client that negotiated version: CONNECT, SUBSCRIBE,
// UNSUBSCRIBE, PINGREQ, and before MQTT 5 DISCONNECT.
func CheckFromServer(p Packet, version byte) error {
	switch t := p.Type(); t {
	case CONNECT, SUBSCRIBE, UNSUBSCRIBE, PINGREQ:
		return withContext(protocolErr("sent by a server"), t, version)
	case DISCONNECT:
		if version != Version5 {
			return withContext(protocolErr("sent by a server before MQTT 5"), t, version)
		}
	}
	return nil
}

// Encode writes p to w in version in one Write.
func Encode(w io.Writer, p Packet, version byte) error {
	b, err := p.AppendTo(make([]byte, 0, p.Size(version)), version)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// PacketBuffered reports whether a whole packet is in the read buffer, so
// that the next Read returns without reading from the connection. A
// server flushes its queued acknowledgements when it is not.
func (d *Decoder) PacketBuffered() bool {
	if d.r == nil {
		return false
	}
	n := d.r.Buffered()
	if n < 2 {
		return false
	}
	b, _ := d.r.Peek(n) // buffered bytes only: no read
	rl, shift := 0, 0
	for i := 1; i < len(b) && i <= 4; i++ {
		rl |= int(b[i]&0x7F) << shift
		if b[i] < 0x80 {
			return i+1+rl <= n
		}
		shift += 7
	}
	return false
}
