package broker

import (
	"github.com/karmanmq/karman/engine/message"
)

// appendRecord appends the stored record of a message the engine looked
// up (its offsets and store time included) to dst.
func appendRecord(dst []byte, m *message.Message) ([]byte, error) {
	start := len(dst)
	dst, err := message.AppendStored(dst, m)
	if err != nil {
		return dst, err
	}
	message.PatchStored(dst[start:], m.QueueOffset, m.CommitLogOffset, m.StoreTimestamp)
	return dst, nil
}

// offsetIDOf returns the offset message id of a stored record, or "" when
// it does not decode.
func offsetIDOf(rec []byte) string {
	h, err := message.PeekStored(rec)
	if err != nil {
		return ""
	}
	return message.OffsetID(h.StoreHost, h.CommitLogOffset)
}
