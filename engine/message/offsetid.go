package message

import (
	"fmt"
	"math"
	"net/netip"
)

const hexUpper = "0123456789ABCDEF"

// Lengths of offset message ids.
const (
	offsetIDLenV4 = 2 * (4 + 4 + 8)  // 32 hex characters
	offsetIDLenV6 = 2 * (16 + 4 + 8) // 56 hex characters

	// OffsetIDMaxLen is the length of the longest offset message id.
	OffsetIDMaxLen = offsetIDLenV6
)

func appendHexUpper(dst, b []byte) []byte {
	for _, c := range b {
		dst = append(dst, hexUpper[c>>4], hexUpper[c&0x0F])
	}
	return dst
}

// OffsetID returns the offset message id of a message stored by storeHost
// at commitLogOffset: the uppercase hex of the host address (4 or 16 bytes),
// the port (int32) and the offset (int64), 32 characters for IPv4 and 56 for
// IPv6. IPv4-mapped addresses are written as IPv4 and an invalid address as
// 0.0.0.0.
func OffsetID(storeHost netip.AddrPort, commitLogOffset int64) string {
	var buf [offsetIDLenV6]byte
	return string(AppendOffsetID(buf[:0], storeHost, commitLogOffset))
}

// AppendOffsetID appends OffsetID(storeHost, commitLogOffset) to dst. It
// allocates only when dst lacks capacity.
func AppendOffsetID(dst []byte, storeHost netip.AddrPort, commitLogOffset int64) []byte {
	var raw [16 + 4 + 8]byte
	b := appendHost(raw[:0], storeHost)
	b = be.AppendUint64(b, uint64(commitLogOffset))
	return appendHexUpper(dst, b)
}

// ParseOffsetID parses an offset message id of either letter case: 32 hex
// characters for an IPv4 host, 56 for IPv6. Errors wrap ErrBadMessageID.
func ParseOffsetID(s string) (netip.AddrPort, int64, error) {
	if len(s) != offsetIDLenV4 && len(s) != offsetIDLenV6 {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: %q has %d characters, want %d or %d",
			ErrBadMessageID, s, len(s), offsetIDLenV4, offsetIDLenV6)
	}
	var raw [offsetIDLenV6 / 2]byte
	n := len(s) / 2
	for i := range n {
		hi, ok1 := fromHex(s[2*i])
		lo, ok2 := fromHex(s[2*i+1])
		if !ok1 || !ok2 {
			return netip.AddrPort{}, 0, fmt.Errorf("%w: %q: not hexadecimal", ErrBadMessageID, s)
		}
		raw[i] = hi<<4 | lo
	}
	ipLen := n - 12
	port := int32(be.Uint32(raw[ipLen:]))
	if port < 0 || port > math.MaxUint16 {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: %q: port %d out of range", ErrBadMessageID, s, port)
	}
	var addr netip.Addr
	if ipLen == 4 {
		addr = netip.AddrFrom4([4]byte(raw[:4]))
	} else {
		addr = netip.AddrFrom16([16]byte(raw[:16]))
	}
	offset := int64(be.Uint64(raw[ipLen+4:]))
	return netip.AddrPortFrom(addr, uint16(port)), offset, nil
}

// fromHex returns the value of a hex digit of either case.
func fromHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
