package transport

import (
	"encoding/binary"

	"golang.org/x/net/http2"
)

// frameHeaderLen is the size of an HTTP/2 frame header.
const frameHeaderLen = 9

// appendFrameHeader appends the header of a frame of the given length.
func appendFrameHeader(b []byte, length int, t http2.FrameType, flags http2.Flags, streamID uint32) []byte {
	return append(b,
		byte(length>>16), byte(length>>8), byte(length),
		byte(t), byte(flags),
		byte(streamID>>24)&0x7f, byte(streamID>>16), byte(streamID>>8), byte(streamID))
}

// appendData appends one DATA frame carrying p.
func appendData(b []byte, streamID uint32, p []byte, end bool) []byte {
	var flags http2.Flags
	if end {
		flags = http2.FlagDataEndStream
	}
	b = appendFrameHeader(b, len(p), http2.FrameData, flags, streamID)
	return append(b, p...)
}

// appendHeaderBlock appends a HEADERS frame carrying block, followed by
// CONTINUATION frames where block is longer than maxFrame.
func appendHeaderBlock(b []byte, streamID uint32, block []byte, end bool, maxFrame int) []byte {
	first := true
	for {
		n := min(len(block), maxFrame)
		var flags http2.Flags
		if n == len(block) {
			flags |= http2.FlagHeadersEndHeaders // same bit in CONTINUATION
		}
		t := http2.FrameContinuation
		if first {
			t = http2.FrameHeaders
			if end {
				flags |= http2.FlagHeadersEndStream
			}
		}
		b = appendFrameHeader(b, n, t, flags, streamID)
		b = append(b, block[:n]...)
		block = block[n:]
		first = false
		if len(block) == 0 {
			return b
		}
	}
}

// appendWindowUpdate appends a WINDOW_UPDATE frame.
func appendWindowUpdate(b []byte, streamID, incr uint32) []byte {
	b = appendFrameHeader(b, 4, http2.FrameWindowUpdate, 0, streamID)
	return binary.BigEndian.AppendUint32(b, incr&0x7fffffff)
}

// appendRSTStream appends a RST_STREAM frame.
func appendRSTStream(b []byte, streamID uint32, code http2.ErrCode) []byte {
	b = appendFrameHeader(b, 4, http2.FrameRSTStream, 0, streamID)
	return binary.BigEndian.AppendUint32(b, uint32(code))
}

// appendSettings appends a SETTINGS frame with the given settings.
func appendSettings(b []byte, settings ...http2.Setting) []byte {
	b = appendFrameHeader(b, 6*len(settings), http2.FrameSettings, 0, 0)
	for _, s := range settings {
		b = binary.BigEndian.AppendUint16(b, uint16(s.ID))
		b = binary.BigEndian.AppendUint32(b, s.Val)
	}
	return b
}

// appendSettingsAck appends the acknowledgement of the peer's SETTINGS.
func appendSettingsAck(b []byte) []byte {
	return appendFrameHeader(b, 0, http2.FrameSettings, http2.FlagSettingsAck, 0)
}

// appendPingAck answers a PING.
func appendPingAck(b []byte, data [8]byte) []byte {
	b = appendFrameHeader(b, 8, http2.FramePing, http2.FlagPingAck, 0)
	return append(b, data[:]...)
}

// appendGoAway appends a GOAWAY frame.
func appendGoAway(b []byte, lastStreamID uint32, code http2.ErrCode, debug string) []byte {
	b = appendFrameHeader(b, 8+len(debug), http2.FrameGoAway, 0, 0)
	b = binary.BigEndian.AppendUint32(b, lastStreamID&0x7fffffff)
	b = binary.BigEndian.AppendUint32(b, uint32(code))
	return append(b, debug...)
}

// appendMessagePrefix appends gRPC's length prefix of an uncompressed
// message of n bytes.
func appendMessagePrefix(b []byte, n int) []byte {
	b = append(b, 0)
	return binary.BigEndian.AppendUint32(b, uint32(n))
}
