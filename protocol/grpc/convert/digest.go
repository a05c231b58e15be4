package convert

import (
	"crypto/md5"
	"hash/crc32"
	"strconv"

	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

// Digest is the body digest a delivered message carries.
//
// RocketMQ 5 clients check the digest of every message they receive and
// treat a mismatch as a corrupt message (which a push consumer never
// hands to the application). Every client checks MD5 the same way, as 32
// upper-case hex digits, which is what RocketMQ's own proxy sends. CRC32
// costs a fraction of MD5, but each client writes it its own way, so it
// may only go to a client whose way is known: DigestFor picks it.
type Digest uint8

const (
	// DigestMD5 is MD5 in 32 upper-case hex digits. It is the zero value,
	// for clients of unknown language.
	DigestMD5 Digest = iota
	// DigestCRC32Decimal is the IEEE CRC32 as an unsigned decimal number:
	// what the Node.js client computes.
	DigestCRC32Decimal
	// DigestCRC32Hex is the IEEE CRC32 in upper-case hex without leading
	// zeros: what the Java, Go and C# clients compute.
	DigestCRC32Hex
	// DigestCRC32Hex8 is the IEEE CRC32 in 8 upper-case hex digits: what
	// the Python and C++ clients compute.
	DigestCRC32Hex8
)

// DigestFor returns the cheapest digest a client written in lang checks
// correctly: a CRC32 in the form the client computes it, or MD5 for
// languages whose client was not checked.
func DigestFor(lang rmqpb.Language) Digest {
	switch lang {
	case rmqpb.Language_NODE_JS:
		return DigestCRC32Decimal
	case rmqpb.Language_JAVA, rmqpb.Language_KOTLIN, rmqpb.Language_GOLANG, rmqpb.Language_DOT_NET:
		return DigestCRC32Hex
	case rmqpb.Language_PYTHON, rmqpb.Language_CPP:
		return DigestCRC32Hex8
	}
	return DigestMD5
}

// Type returns the protocol's digest type of d.
func (d Digest) Type() rmqpb.DigestType {
	if d == DigestMD5 {
		return rmqpb.DigestType_MD5
	}
	return rmqpb.DigestType_CRC32
}

// maxChecksum is the longest checksum appendChecksum writes.
const maxChecksum = 2 * md5.Size

// appendChecksum appends the checksum of body in the form d names.
func appendChecksum(dst, body []byte, d Digest) []byte {
	switch d {
	case DigestCRC32Decimal:
		return strconv.AppendUint(dst, uint64(crc32.ChecksumIEEE(body)), 10)
	case DigestCRC32Hex:
		return appendHex32(dst, crc32.ChecksumIEEE(body), false)
	case DigestCRC32Hex8:
		return appendHex32(dst, crc32.ChecksumIEEE(body), true)
	}
	return appendMD5(dst, body)
}

// appendHex32 appends v in upper-case hex, in 8 digits when pad is set,
// else without leading zeros.
func appendHex32(dst []byte, v uint32, pad bool) []byte {
	var b [8]byte
	for i := range b {
		b[i] = hexUpper[v>>(28-4*i)&0x0F]
	}
	i := 0
	if !pad {
		for i < len(b)-1 && b[i] == '0' {
			i++
		}
	}
	return append(dst, b[i:]...)
}

// appendMD5 appends the upper-case hex MD5 of body.
func appendMD5(dst, body []byte) []byte {
	sum := md5.Sum(body)
	for _, c := range sum {
		dst = append(dst, hexUpper[c>>4], hexUpper[c&0x0F])
	}
	return dst
}
