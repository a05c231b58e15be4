package wire

import (
	"encoding/binary"
)

// DefaultMaxFrameSize is the frame size limit used when
// DecodeOptions.MaxFrameSize is zero: 16 MiB.
const DefaultMaxFrameSize = 16 << 20

// binaryFixedLen is the size of the fixed part of a ROCKETMQ header.
const binaryFixedLen = 21

// DecodeOptions configures decoding. The zero value is ready to use.
type DecodeOptions struct {
	// MaxFrameSize is the largest length prefix accepted by Reader and
	// DecodeFrame; larger ones fail with ErrFrameTooLarge. Zero means
	// DefaultMaxFrameSize.
	MaxFrameSize int
	// StrictExtFields rejects JSON headers whose extFields values are not
	// JSON strings, as the Go client does. By default numbers and booleans
	// are accepted and kept as their JSON text, and null values are
	// dropped.
	StrictExtFields bool
	// DeferExtFields checks the extFields of JSON headers but leaves them
	// undecoded: ExtFields stays nil until Command.LoadExtFields, and
	// Command.DecodeHeader reads the headers of sends and pulls straight
	// from the entries gathered while checking, without building the map
	// or scanning the text again. Binary headers are decoded at once.
	DeferExtFields bool
}

func (o DecodeOptions) maxFrameSize() int {
	if o.MaxFrameSize <= 0 {
		return DefaultMaxFrameSize
	}
	return o.MaxFrameSize
}

// Decode decodes one frame without its length prefix (the length bytes
// that follow the prefix) with the default options. See
// DecodeOptions.Decode.
func Decode(frame []byte) (*Command, error) {
	return DecodeOptions{}.Decode(frame)
}

// DecodeFrame decodes one whole frame, length prefix included, with the
// default options. See DecodeOptions.DecodeFrame.
func DecodeFrame(frame []byte) (*Command, error) {
	return DecodeOptions{}.DecodeFrame(frame)
}

// DecodeFrame decodes one whole frame, length prefix included. The prefix
// must equal len(frame)-4 and must not exceed MaxFrameSize.
func (o DecodeOptions) DecodeFrame(frame []byte) (*Command, error) {
	if len(frame) < 4 {
		return nil, malformed("frame", 0, "%d bytes cannot hold the 4-byte length prefix", len(frame))
	}
	n := int32(binary.BigEndian.Uint32(frame))
	if n < 4 {
		return nil, malformed("frame", 0, "length prefix %d is below the minimum of 4", n)
	}
	if int(n) > o.maxFrameSize() {
		return nil, &DecodeError{Kind: ErrFrameTooLarge, Part: "frame", Offset: 0,
			Detail: "length prefix " + itoa(int(n)) + " exceeds the limit of " + itoa(o.maxFrameSize())}
	}
	if int(n) != len(frame)-4 {
		return nil, malformed("frame", 0, "length prefix %d does not match the %d bytes that follow it", n, len(frame)-4)
	}
	return o.Decode(frame[4:])
}

// Decode decodes one frame without its length prefix: the header-length
// word, the header and the body. The returned command's Body aliases
// frame; its strings do not.
func (o DecodeOptions) Decode(frame []byte) (*Command, error) {
	if len(frame) < 4 {
		return nil, malformed("frame", 0, "%d bytes cannot hold the 4-byte header length", len(frame))
	}
	word := binary.BigEndian.Uint32(frame)
	typ := SerializeType(word >> 24)
	hlen := int(word & 0xFFFFFF)
	if hlen > len(frame)-4 {
		return nil, malformed("frame", 0, "header length %d exceeds the %d bytes after it", hlen, len(frame)-4)
	}
	header := frame[4 : 4+hlen]
	c := &Command{SerializeType: typ}
	var err error
	switch typ {
	case JSON:
		err = decodeJSONHeader(header, c, o.StrictExtFields, o.DeferExtFields)
	case RocketMQ:
		err = decodeBinaryHeader(header, c)
	default:
		return nil, &DecodeError{Kind: ErrUnknownSerializeType, Part: "frame", Offset: 0,
			Detail: "header type byte is " + itoa(int(typ)) + ", want 0 (JSON) or 1 (ROCKETMQ)"}
	}
	if err != nil {
		return nil, err
	}
	if body := frame[4+hlen:]; len(body) > 0 {
		c.Body = body[:len(body):len(body)]
	}
	return c, nil
}

// decodeBinaryHeader decodes a ROCKETMQ header. Like Java it treats a
// remark or extFields length of zero or less as absent, and ignores bytes
// after the extFields block.
func decodeBinaryHeader(h []byte, c *Command) error {
	const part = "binary header"
	if len(h) < binaryFixedLen {
		return malformed(part, 0, "%d bytes is shorter than the %d-byte fixed part", len(h), binaryFixedLen)
	}
	c.Code = int32(int16(binary.BigEndian.Uint16(h[0:])))
	c.Language = LanguageCode(h[2])
	c.Version = int32(int16(binary.BigEndian.Uint16(h[3:])))
	c.Opaque = int32(binary.BigEndian.Uint32(h[5:]))
	c.Flag = int32(binary.BigEndian.Uint32(h[9:]))
	pos := 13
	if rlen := int32(binary.BigEndian.Uint32(h[pos:])); rlen > 0 {
		pos += 4
		if int64(rlen) > int64(len(h)-pos-4) {
			return malformed(part, pos-4, "remark length %d exceeds the %d bytes left before the extFields length", rlen, max(len(h)-pos-4, 0))
		}
		c.Remark = string(h[pos : pos+int(rlen)])
		pos += int(rlen)
	} else {
		pos += 4
	}
	if len(h)-pos < 4 {
		return malformed(part, pos, "missing extFields length")
	}
	elen := int32(binary.BigEndian.Uint32(h[pos:]))
	pos += 4
	if elen <= 0 {
		return nil
	}
	if int64(elen) > int64(len(h)-pos) {
		return malformed(part, pos-4, "extFields length %d exceeds the %d bytes left", elen, len(h)-pos)
	}
	ext := h[pos : pos+int(elen)]
	// An entry takes 6 bytes of lengths plus its key and value, about 24
	// bytes in typical headers.
	c.ExtFields = make(map[string]string, min(max(len(ext)/24, 8), 64))
	for off := 0; off < len(ext); {
		if len(ext)-off < 2 {
			return malformed(part, pos+off, "extFields entry truncated before its key length")
		}
		klen := int(int16(binary.BigEndian.Uint16(ext[off:])))
		off += 2
		if klen < 0 || klen > len(ext)-off {
			return malformed(part, pos+off-2, "extFields key length %d with %d bytes left", klen, len(ext)-off)
		}
		key := ext[off : off+klen]
		off += klen
		if len(ext)-off < 4 {
			return malformed(part, pos+off, "extFields entry %q truncated before its value length", key)
		}
		vlen := int64(int32(binary.BigEndian.Uint32(ext[off:])))
		off += 4
		if vlen < 0 || vlen > int64(len(ext)-off) {
			return malformed(part, pos+off-4, "extFields[%q] value length %d with %d bytes left", key, vlen, len(ext)-off)
		}
		c.ExtFields[intern(key)] = intern(ext[off : off+int(vlen)])
		off += int(vlen)
	}
	return nil
}
