package message

import (
	"fmt"
	"math"
)

// Rewrite says how AppendRewritten changes a stored record. Every field
// it does not name is copied as the record has it.
type Rewrite struct {
	Topic   string // the copy's topic
	QueueID int32  // the copy's queue id
	// Drop names the properties the copy leaves out.
	Drop []string
	// Add holds name, value pairs appended to the copy's properties. A
	// name that the record may already carry belongs in Drop as well,
	// else the copy carries it twice (readers take the later value).
	Add []string
}

// drops reports whether r drops the property name.
func (r *Rewrite) drops(name []byte) bool {
	for _, d := range r.Drop {
		if string(name) == d {
			return true
		}
	}
	return false
}

// AppendRewritten appends to dst a copy of the stored record at the start
// of rec, changed as r says, and returns the extended buffer. It copies
// the body and the other fields as they are, without decoding the
// properties into a map: the engine uses it to move a stored message to
// another topic (a scheduled message falling due, a committed
// transaction) at the cost of a copy.
//
// The properties the copy keeps stay in their order, and pieces that do
// not decode as a pair are kept as they are; a missing final separator is
// added. It allocates only when dst lacks capacity. On error dst is
// returned unchanged; errors wrap ErrMalformed (rec), ErrInvalidName
// (topic longer than MaxTopicLength), ErrInvalidProperty or
// ErrPropertiesTooLarge.
func AppendRewritten(dst, rec []byte, r *Rewrite) ([]byte, error) {
	h, err := PeekStored(rec)
	if err != nil {
		return dst, err
	}
	if len(r.Topic) > MaxTopicLength {
		return dst, fmt.Errorf("%w: topic of %d bytes, limit %d", ErrInvalidName, len(r.Topic), MaxTopicLength)
	}
	if len(r.Add)%2 != 0 {
		return dst, fmt.Errorf("%w: %d names and values to add", ErrInvalidProperty, len(r.Add))
	}
	for i := 0; i < len(r.Add); i += 2 {
		if r.Add[i] == "" || hasSeparator(r.Add[i]) || hasSeparator(r.Add[i+1]) {
			return dst, fmt.Errorf("%w: %q=%q", ErrInvalidProperty, r.Add[i], r.Add[i+1])
		}
	}
	// The body ends where the topic's length byte is.
	bodyEnd := int(h.TotalSize) - len(h.Properties) - 2 - len(h.Topic) - 1
	start := len(dst)
	dst = append(dst, rec[:bodyEnd]...)
	be.PutUint32(dst[start+offQueueID:], uint32(r.QueueID))
	dst = append(dst, byte(len(r.Topic)))
	dst = append(dst, r.Topic...)
	lenAt := len(dst)
	dst = append(dst, 0, 0)
	for props := h.Properties; len(props) > 0; {
		var piece []byte
		piece, props = nextPiece(props)
		if k, _, ok := splitPair(piece); ok && r.drops(k) {
			continue
		}
		dst = append(dst, piece...)
		dst = append(dst, propertySeparator)
	}
	for i := 0; i < len(r.Add); i += 2 {
		dst = append(dst, r.Add[i]...)
		dst = append(dst, nameValueSeparator)
		dst = append(dst, r.Add[i+1]...)
		dst = append(dst, propertySeparator)
	}
	propsLen := len(dst) - lenAt - 2
	if propsLen > MaxPropertiesSize {
		return dst[:start], fmt.Errorf("%w: %d bytes encoded, limit %d", ErrPropertiesTooLarge, propsLen, MaxPropertiesSize)
	}
	if len(dst)-start > math.MaxInt32 {
		return dst[:start], fmt.Errorf("%w: %d bytes", ErrTooLarge, len(dst)-start)
	}
	be.PutUint16(dst[lenAt:], uint16(propsLen))
	be.PutUint32(dst[start+offTotalSize:], uint32(len(dst)-start))
	return dst, nil
}

// SetTransaction writes the transaction state t (see TransactionType) and
// the PREPAREDTRANSACTIONOFFSET field into the record at the start of rec,
// in place. It panics when rec is too short to hold the fields.
func SetTransaction(rec []byte, t int32, preparedOffset int64) {
	sysFlag := int32(be.Uint32(rec[offSysFlag:]))
	be.PutUint32(rec[offSysFlag:], uint32(WithTransactionType(sysFlag, t)))
	at := offBornHost + hostLenFor(sysFlag, SysFlagBornHostV6) + 8 + hostLenFor(sysFlag, SysFlagStoreHostV6) + 4
	be.PutUint64(rec[at:], uint64(preparedOffset))
}
