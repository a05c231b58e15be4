package message

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"net/netip"
	"slices"

	"github.com/karmanmq/karman/filter"
)

// Magic codes found in the MAGICCODE field.
const (
	MagicV1    uint32 = 0xDAA320A7 // stored message, 1-byte topic length: the only one this package writes or reads
	MagicV2    uint32 = 0xDAA320AB // stored message, 2-byte topic length (Java, topics over 127 bytes)
	MagicBlank uint32 = 0xCBD43194 // end-of-file filler in Java commit-log files
)

// MaxTopicLength is the longest topic a V1 stored record can hold.
const MaxTopicLength = math.MaxUint8

// Field offsets and sizes of the stored record.
const (
	offTotalSize       = 0
	offMagic           = 4
	offBodyCRC         = 8
	offQueueID         = 12
	offFlag            = 16
	offQueueOffset     = 20
	offCommitLogOffset = 28
	offSysFlag         = 36
	offBornTimestamp   = 40
	offBornHost        = 48

	hostV4Len = 4 + 4  // address and int32 port
	hostV6Len = 16 + 4 // address and int32 port

	// storedFixed is the size of a record without hosts, body, topic and
	// properties: every fixed-width field and the three length prefixes.
	storedFixed = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 4 + 8 + 4 + 1 + 2

	// MinStoredSize is the size of the smallest valid record: IPv4 hosts
	// and an empty body, topic and properties string.
	MinStoredSize = storedFixed + 2*hostV4Len
)

var be = binary.BigEndian

// Header is a stored record read in place by PeekStored. Topic, Properties
// and Body alias the decoded buffer.
type Header struct {
	TotalSize                 int32
	BodyCRC                   uint32
	QueueID                   int32
	Flag                      int32
	QueueOffset               int64
	CommitLogOffset           int64
	SysFlag                   int32
	BornTimestamp             int64
	BornHost                  netip.AddrPort
	StoreTimestamp            int64
	StoreHost                 netip.AddrPort
	ReconsumeTimes            int32
	PreparedTransactionOffset int64
	Body                      []byte
	Topic                     []byte
	Properties                []byte // encoded properties string
}

// Property returns the value of the property name, aliasing the record.
// It does not allocate.
func (h *Header) Property(name string) ([]byte, bool) {
	return LookupProperty(h.Properties, name)
}

// TagHash returns the TagHash of the record's tag, 0 when it has none.
func (h *Header) TagHash() int64 {
	tag, _ := h.Property(PropertyTags)
	return filter.TagHash(tag)
}

// VerifyBodyCRC reports whether BodyCRC matches Body.
func (h *Header) VerifyBodyCRC() bool {
	return bodyCRC(h.Body) == h.BodyCRC
}

func bodyCRC(body []byte) uint32 {
	return crc32.ChecksumIEEE(body) & 0x7FFFFFFF
}

// hostIsV4 reports whether a host is written in the 4-byte form: IPv4,
// IPv4-mapped IPv6 (written unmapped), and the invalid address (written as
// 0.0.0.0).
func hostIsV4(a netip.AddrPort) bool {
	addr := a.Addr()
	return !addr.IsValid() || addr.Is4() || addr.Is4In6()
}

func hostLen(a netip.AddrPort) int {
	if hostIsV4(a) {
		return hostV4Len
	}
	return hostV6Len
}

func hostLenFor(sysFlag, v6Bit int32) int {
	if sysFlag&v6Bit != 0 {
		return hostV6Len
	}
	return hostV4Len
}

// StoredSize returns the length of the stored record of m when its
// properties encode to propsLen bytes (see PropertiesSize).
func StoredSize(m *Message, propsLen int) int {
	return storedFixed + hostLen(m.BornHost) + hostLen(m.StoreHost) +
		len(m.Body) + len(m.Topic) + propsLen
}

// AppendStored appends the V1 stored record of m to dst and returns the
// extended buffer. It writes TOTALSIZE and BODYCRC computed from m (not
// m.StoreSize or m.BodyCRC), m.Properties encoded or, when it is nil,
// m.EncodedProperties as they are (they must pass CheckEncodedProperties),
// and m.SysFlag with SysFlagBornHostV6 and
// SysFlagStoreHostV6 set from the host addresses: IPv4 and IPv4-mapped
// addresses are written in the 4-byte form, an invalid address as 0.0.0.0.
// m is not modified.
//
// It allocates only when dst lacks capacity. On error dst is returned
// unchanged; errors wrap ErrInvalidName (topic longer than MaxTopicLength),
// ErrInvalidProperty, ErrPropertiesTooLarge or ErrTooLarge.
func AppendStored(dst []byte, m *Message) ([]byte, error) {
	if len(m.Topic) > MaxTopicLength {
		return dst, fmt.Errorf("%w: topic of %d bytes, limit %d", ErrInvalidName, len(m.Topic), MaxTopicLength)
	}
	propsLen, err := storedPropertiesSize(m)
	if err != nil {
		return dst, err
	}
	size := StoredSize(m, propsLen)
	if size > math.MaxInt32 {
		return dst, fmt.Errorf("%w: %d bytes", ErrTooLarge, size)
	}

	sysFlag := m.SysFlag &^ (SysFlagBornHostV6 | SysFlagStoreHostV6)
	if !hostIsV4(m.BornHost) {
		sysFlag |= SysFlagBornHostV6
	}
	if !hostIsV4(m.StoreHost) {
		sysFlag |= SysFlagStoreHostV6
	}

	dst = slices.Grow(dst, size)
	start := len(dst)
	dst = be.AppendUint32(dst, uint32(size))
	dst = be.AppendUint32(dst, MagicV1)
	dst = be.AppendUint32(dst, bodyCRC(m.Body))
	dst = be.AppendUint32(dst, uint32(m.QueueID))
	dst = be.AppendUint32(dst, uint32(m.Flag))
	dst = be.AppendUint64(dst, uint64(m.QueueOffset))
	dst = be.AppendUint64(dst, uint64(m.CommitLogOffset))
	dst = be.AppendUint32(dst, uint32(sysFlag))
	dst = be.AppendUint64(dst, uint64(m.BornTimestamp))
	dst = appendHost(dst, m.BornHost)
	dst = be.AppendUint64(dst, uint64(m.StoreTimestamp))
	dst = appendHost(dst, m.StoreHost)
	dst = be.AppendUint32(dst, uint32(m.ReconsumeTimes))
	dst = be.AppendUint64(dst, uint64(m.PreparedTransactionOffset))
	dst = be.AppendUint32(dst, uint32(len(m.Body)))
	dst = append(dst, m.Body...)
	dst = append(dst, byte(len(m.Topic)))
	dst = append(dst, m.Topic...)
	dst = be.AppendUint16(dst, uint16(propsLen))
	if m.Properties == nil {
		dst = append(dst, m.EncodedProperties...)
	} else {
		dst = AppendProperties(dst, m.Properties)
	}

	if n := len(dst) - start; n != size {
		// Only possible if m.Properties changed between the two passes,
		// which is a data race in the caller.
		return dst[:start], fmt.Errorf("%w: wrote %d bytes, expected %d (properties changed during encoding)", ErrInvalidProperty, n, size)
	}
	return dst, nil
}

// storedPropertiesSize validates the properties AppendStored writes for m
// (Properties, or EncodedProperties when that is nil) and returns their
// encoded length.
func storedPropertiesSize(m *Message) (int, error) {
	if m.Properties == nil {
		if err := CheckEncodedProperties(m.EncodedProperties); err != nil {
			return 0, err
		}
		return len(m.EncodedProperties), nil
	}
	return checkedPropertiesSize(m.Properties)
}

func appendHost(dst []byte, a netip.AddrPort) []byte {
	addr := a.Addr()
	if hostIsV4(a) {
		var ip [4]byte
		if addr.IsValid() {
			ip = addr.Unmap().As4()
		}
		dst = append(dst, ip[:]...)
	} else {
		ip := addr.As16()
		dst = append(dst, ip[:]...)
	}
	return be.AppendUint32(dst, uint32(a.Port()))
}

// StoredQueueOffset reads the QUEUEOFFSET field of the stored record b in
// place, without checking the rest of it; false when b is too short to
// hold one.
func StoredQueueOffset(b []byte) (int64, bool) {
	if len(b) < offQueueOffset+8 {
		return 0, false
	}
	return int64(be.Uint64(b[offQueueOffset:])), true
}

// PeekStored reads the stored record at the start of b without copying:
// the slices of the Header alias b. b may hold more bytes after the record;
// Header.TotalSize says where the record ends. Every length is checked
// against TOTALSIZE and len(b), and the fields must fill TOTALSIZE exactly;
// errors wrap ErrMalformed. It does not allocate.
func PeekStored(b []byte) (Header, error) {
	var h Header
	if len(b) < MinStoredSize {
		return h, fmt.Errorf("%w: %d bytes, shorter than the smallest record (%d)", ErrMalformed, len(b), MinStoredSize)
	}
	size := int32(be.Uint32(b[offTotalSize:]))
	if size < MinStoredSize {
		return h, fmt.Errorf("%w: TOTALSIZE %d below %d", ErrMalformed, size, MinStoredSize)
	}
	if int64(size) > int64(len(b)) {
		return h, fmt.Errorf("%w: TOTALSIZE %d, only %d bytes", ErrMalformed, size, len(b))
	}
	if magic := be.Uint32(b[offMagic:]); magic != MagicV1 {
		return h, fmt.Errorf("%w: magic code %#08x", ErrMalformed, magic)
	}
	rec := b[:size]

	h.TotalSize = size
	h.BodyCRC = be.Uint32(rec[offBodyCRC:])
	h.QueueID = int32(be.Uint32(rec[offQueueID:]))
	h.Flag = int32(be.Uint32(rec[offFlag:]))
	h.QueueOffset = int64(be.Uint64(rec[offQueueOffset:]))
	h.CommitLogOffset = int64(be.Uint64(rec[offCommitLogOffset:]))
	h.SysFlag = int32(be.Uint32(rec[offSysFlag:]))
	h.BornTimestamp = int64(be.Uint64(rec[offBornTimestamp:]))

	bornLen := hostLenFor(h.SysFlag, SysFlagBornHostV6)
	storeLen := hostLenFor(h.SysFlag, SysFlagStoreHostV6)
	if int(size) < storedFixed+bornLen+storeLen {
		return h, fmt.Errorf("%w: TOTALSIZE %d too small for its hosts", ErrMalformed, size)
	}
	var err error
	pos := offBornHost
	if h.BornHost, err = readHost(rec[pos : pos+bornLen]); err != nil {
		return h, fmt.Errorf("%w: born host: %v", ErrMalformed, err)
	}
	pos += bornLen
	h.StoreTimestamp = int64(be.Uint64(rec[pos:]))
	pos += 8
	if h.StoreHost, err = readHost(rec[pos : pos+storeLen]); err != nil {
		return h, fmt.Errorf("%w: store host: %v", ErrMalformed, err)
	}
	pos += storeLen
	h.ReconsumeTimes = int32(be.Uint32(rec[pos:]))
	pos += 4
	h.PreparedTransactionOffset = int64(be.Uint64(rec[pos:]))
	pos += 8

	// The fixed part has been checked to fit; from here on every length
	// is checked against what is left. left counts the bytes after pos.
	bodyLen := int64(int32(be.Uint32(rec[pos:])))
	pos += 4
	if left := int64(len(rec) - pos); bodyLen < 0 || bodyLen > left-3 {
		return h, fmt.Errorf("%w: body length %d with %d bytes left", ErrMalformed, bodyLen, left)
	}
	h.Body = rec[pos : pos+int(bodyLen) : pos+int(bodyLen)]
	pos += int(bodyLen)

	topicLen := int(rec[pos])
	pos++
	if left := len(rec) - pos; topicLen > left-2 {
		return h, fmt.Errorf("%w: topic length %d with %d bytes left", ErrMalformed, topicLen, left)
	}
	h.Topic = rec[pos : pos+topicLen : pos+topicLen]
	pos += topicLen

	propsLen := int(int16(be.Uint16(rec[pos:])))
	pos += 2
	if left := len(rec) - pos; propsLen != left {
		return h, fmt.Errorf("%w: properties length %d, %d bytes left in the record", ErrMalformed, propsLen, left)
	}
	h.Properties = rec[pos:len(rec):len(rec)]
	return h, nil
}

// readHost reads an address (4 or 16 bytes, by len(b)) and its int32 port.
func readHost(b []byte) (netip.AddrPort, error) {
	n := len(b) - 4
	port := int32(be.Uint32(b[n:]))
	if port < 0 || port > math.MaxUint16 {
		return netip.AddrPort{}, fmt.Errorf("port %d out of range", port)
	}
	var addr netip.Addr
	if n == 4 {
		addr = netip.AddrFrom4([4]byte(b[:4]))
	} else {
		addr = netip.AddrFrom16([16]byte(b[:16]))
	}
	return netip.AddrPortFrom(addr, uint16(port)), nil
}

// DecodeStored decodes the stored record at the start of b and returns it
// with the number of bytes it occupies. The Message owns its data (nothing
// aliases b), StoreSize and BodyCRC are taken from the record, and a
// compressed body is returned as stored. An empty body or properties string
// decodes to nil. Errors wrap ErrMalformed; see PeekStored for the checks.
func DecodeStored(b []byte) (*Message, int, error) {
	h, err := PeekStored(b)
	if err != nil {
		return nil, 0, err
	}
	props, err := DecodeProperties(h.Properties)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: properties: %v", ErrMalformed, err)
	}
	m := &Message{
		Topic:                     string(h.Topic),
		Flag:                      h.Flag,
		SysFlag:                   h.SysFlag,
		Properties:                props,
		BornTimestamp:             h.BornTimestamp,
		BornHost:                  h.BornHost,
		ReconsumeTimes:            h.ReconsumeTimes,
		QueueID:                   h.QueueID,
		QueueOffset:               h.QueueOffset,
		CommitLogOffset:           h.CommitLogOffset,
		StoreTimestamp:            h.StoreTimestamp,
		StoreHost:                 h.StoreHost,
		PreparedTransactionOffset: h.PreparedTransactionOffset,
		StoreSize:                 h.TotalSize,
		BodyCRC:                   h.BodyCRC,
	}
	if len(h.Body) > 0 {
		m.Body = slices.Clone(h.Body)
	}
	return m, int(h.TotalSize), nil
}

// PatchStored writes the queue offset, commit-log offset and store
// timestamp into the record at the start of rec, in place. rec must start
// with a record written by AppendStored (only its SYSFLAG is read, to find
// the store timestamp); like the Put methods of encoding/binary it panics
// when rec is too short to hold those fields.
func PatchStored(rec []byte, queueOffset, commitLogOffset, storeTimestamp int64) {
	sysFlag := int32(be.Uint32(rec[offSysFlag:]))
	ts := offBornHost + hostLenFor(sysFlag, SysFlagBornHostV6)
	be.PutUint64(rec[ts:], uint64(storeTimestamp))
	be.PutUint64(rec[offCommitLogOffset:], uint64(commitLogOffset))
	be.PutUint64(rec[offQueueOffset:], uint64(queueOffset))
}

// SetQueue writes the queue id and queue offset into the record at the
// start of rec, in place: a front-end uses it on a copy of a record it
// serves from a light message queue, which has its own queue and offset.
// It panics when rec is shorter than the fixed header.
func SetQueue(rec []byte, queueID int32, queueOffset int64) {
	be.PutUint64(rec[offQueueOffset:], uint64(queueOffset))
	be.PutUint32(rec[offQueueID:], uint32(queueID))
}

// ReconsumeTimes reads the RECONSUMETIMES field of the record at the start
// of rec: how many times the message was consumed and sent back before it
// was stored. It panics when rec is too short to hold the field.
func ReconsumeTimes(rec []byte) int32 {
	return int32(be.Uint32(rec[reconsumeTimesAt(rec):]))
}

// SetReconsumeTimes writes the RECONSUMETIMES field of the record at the
// start of rec, in place: the store uses it on a copy it delivers again. It
// panics when rec is too short to hold the field.
func SetReconsumeTimes(rec []byte, n int32) {
	be.PutUint32(rec[reconsumeTimesAt(rec):], uint32(n))
}

// reconsumeTimesAt is where the RECONSUMETIMES field of the record at the
// start of rec lies, after the hosts, whose length its sysFlag gives.
func reconsumeTimesAt(rec []byte) int {
	sysFlag := int32(be.Uint32(rec[offSysFlag:]))
	return offBornHost + hostLenFor(sysFlag, SysFlagBornHostV6) + 8 + hostLenFor(sysFlag, SysFlagStoreHostV6)
}
