// Package tracedata decodes the message-trace records RocketMQ clients
// send to the trace topic (RMQ_SYS_TRACE_TOPIC) when message tracing is
// on: what the console shows of a message's trace.
//
// A trace message's body holds one or more records, each ending with
// U+0002; a record's fields are separated by U+0001, the first naming its
// type:
//
//	Pub            time region group topic msgId tags keys storeHost bodyLength costMs msgType [offsetMsgId] success [clientHost]
//	SubBefore      time region group requestId msgId retryTimes keys [clientHost]
//	SubAfter       requestId msgId costMs success keys [contextCode [time [group]]]
//	EndTransaction time region group topic msgId tags keys storeHost msgType transactionId state fromCheck
//
// Times are ms since the epoch; msgType is the ordinal of RocketMQ's
// MessageType (0 normal, 1 transactional half, 2 transactional commit, 3
// delay, 4 FIFO). The bracketed fields are those only some clients send
// (the Go client sends them all); keys written "null" (what clients
// write for none) are empty. Records of other types are skipped, as
// RocketMQ's own decoder skips them.
//
// Decode is a pure function, safe for concurrent use.
package tracedata

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Separators of the format.
const (
	FieldSep  = "\u0001" // between the fields of a record
	RecordSep = "\u0002" // after each record
)

// Record types.
const (
	Pub            = "Pub"
	SubBefore      = "SubBefore"
	SubAfter       = "SubAfter"
	EndTransaction = "EndTransaction"
)

// ErrMalformed matches the error of a record that does not decode.
var ErrMalformed = errors.New("tracedata: malformed record")

// Record is one trace record; the fields its type lacks are zero.
type Record struct {
	Type string `json:"type"`
	// Time is when the client recorded it (ms since the epoch); 0 when
	// the record carries none (a SubAfter of an old client).
	Time      int64  `json:"time,omitempty"`
	Region    string `json:"region,omitempty"`
	Group     string `json:"group,omitempty"`
	RequestID string `json:"requestId,omitempty"`
	Topic     string `json:"topic,omitempty"`
	MsgID     string `json:"msgId"`
	Tags      string `json:"tags,omitempty"`
	Keys      string `json:"keys,omitempty"`
	StoreHost string `json:"storeHost,omitempty"`
	// BodyLength is a Pub's body size in bytes.
	BodyLength int `json:"bodyLength,omitempty"`
	// CostMillis is how long the send (Pub) or the consumption
	// (SubAfter) took.
	CostMillis  int    `json:"costMillis,omitempty"`
	MsgType     int    `json:"msgType,omitempty"`
	OffsetMsgID string `json:"offsetMsgId,omitempty"`
	Success     bool   `json:"success"`
	ClientHost  string `json:"clientHost,omitempty"`
	// RetryTimes is a SubBefore's reconsume count.
	RetryTimes int `json:"retryTimes,omitempty"`
	// ContextCode is a SubAfter's consume result code.
	ContextCode      int    `json:"contextCode,omitempty"`
	TransactionID    string `json:"transactionId,omitempty"`
	TransactionState string `json:"transactionState,omitempty"`
	FromCheck        bool   `json:"fromCheck,omitempty"`
}

// Decode returns the records of a trace message's body, in order. A
// record that does not decode is left out and the first such is
// reported, wrapping ErrMalformed; the others are returned all the same.
func Decode(body string) ([]Record, error) {
	var (
		out   []Record
		first error
	)
	for i, raw := range strings.Split(body, RecordSep) {
		if raw == "" {
			continue
		}
		r, ok, err := decodeRecord(strings.Split(raw, FieldSep))
		if err != nil {
			if first == nil {
				first = fmt.Errorf("%w %d: %w", ErrMalformed, i, err)
			}
			continue
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, first
}

// minFields is the fewest fields of each type.
var minFields = map[string]int{Pub: 13, SubBefore: 8, SubAfter: 6, EndTransaction: 13}

// decodeRecord decodes the fields f of one record; false for a type it
// does not know.
func decodeRecord(f []string) (Record, bool, error) {
	r := Record{Type: f[0]}
	n, known := minFields[r.Type]
	if !known {
		return r, false, nil
	}
	if len(f) < n {
		return r, false, fmt.Errorf("%s with %d fields, want at least %d", r.Type, len(f), n)
	}
	d := decoder{f: f}
	switch r.Type {
	case Pub:
		r.Time = d.int64(1)
		r.Region, r.Group, r.Topic, r.MsgID, r.Tags, r.Keys, r.StoreHost = f[2], f[3], f[4], f[5], f[6], f[7], f[8]
		r.BodyLength, r.CostMillis, r.MsgType = d.int(9), d.int(10), d.int(11)
		if len(f) == 13 {
			r.Success = d.bool(12)
		} else {
			r.OffsetMsgID, r.Success = f[12], d.bool(13)
		}
		if len(f) >= 15 {
			r.ClientHost = f[14]
		}
	case SubBefore:
		r.Time = d.int64(1)
		r.Region, r.Group, r.RequestID, r.MsgID = f[2], f[3], f[4], f[5]
		r.RetryTimes, r.Keys = d.int(6), keys(f[7])
		if len(f) >= 9 {
			r.ClientHost = f[8]
		}
	case SubAfter:
		r.RequestID, r.MsgID = f[1], f[2]
		r.CostMillis, r.Success, r.Keys = d.int(3), d.bool(4), keys(f[5])
		if len(f) >= 7 {
			r.ContextCode = d.int(6)
		}
		if len(f) >= 8 {
			r.Time = d.int64(7)
		}
		if len(f) >= 9 {
			r.Group = f[8]
		}
	case EndTransaction:
		r.Time = d.int64(1)
		r.Region, r.Group, r.Topic, r.MsgID, r.Tags, r.Keys, r.StoreHost = f[2], f[3], f[4], f[5], f[6], f[7], f[8]
		r.MsgType, r.TransactionID, r.TransactionState, r.FromCheck = d.int(9), f[10], f[11], d.bool(12)
	}
	return r, true, d.err
}

// keys returns the keys field k, "" for "null".
func keys(k string) string {
	if k == "null" {
		return ""
	}
	return k
}

// decoder parses fields, keeping the first error.
type decoder struct {
	f   []string
	err error
}

func (d *decoder) int64(i int) int64 {
	v, err := strconv.ParseInt(d.f[i], 10, 64)
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("field %d of %s: %q is not a number", i, d.f[0], d.f[i])
	}
	return v
}

func (d *decoder) int(i int) int {
	v, err := strconv.ParseInt(d.f[i], 10, 32)
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("field %d of %s: %q is not a number", i, d.f[0], d.f[i])
	}
	return int(v)
}

func (d *decoder) bool(i int) bool {
	v, err := strconv.ParseBool(d.f[i])
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("field %d of %s: %q is not true or false", i, d.f[0], d.f[i])
	}
	return v
}
