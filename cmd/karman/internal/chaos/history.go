package chaos

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"
)

// Send is one send of the workload, acknowledged or not.
type Send struct {
	Key   string
	Seq   int
	Group string // the broker group the message was addressed to
	Queue int
	// Acked reports whether the broker answered SEND_OK.
	Acked bool
	// By is the address of the member that stored an acknowledged
	// message, from its offset message id ("" when unknown).
	By         string
	Start, End time.Time
}

// Delivery is one delivery of a message to the workload's consumer.
type Delivery struct {
	Key    string
	Seq    int
	Group  string
	Queue  int
	Offset int64 // the queue offset the message was stored at
	At     time.Time
}

// Verdict is what a history shows.
type Verdict struct {
	Acked  int `json:"acked"`
	Failed int `json:"failed"` // sends not acknowledged (errors and timeouts)
	// Consumed counts distinct messages delivered at least once.
	Consumed int `json:"consumed"`
	// Lost counts acknowledged messages never delivered.
	Lost int `json:"lost"`
	// Duplicated counts messages delivered more than once.
	Duplicated int `json:"duplicated"`
	// OrderViolations counts, per key, the places where a queue holds an
	// acknowledged message of the key before one sent earlier.
	OrderViolations int `json:"order_violations"`
	// UnackedConsumed counts messages whose send failed or timed out but
	// which were stored anyway (allowed: the client cannot tell).
	UnackedConsumed int `json:"unacked_consumed"`
}

// Acked returns the acknowledged messages.
func Acked(sends []Send) []msgID {
	var ids []msgID
	for _, s := range sends {
		if s.Acked {
			ids = append(ids, msgID{s.Key, s.Seq})
		}
	}
	return ids
}

// msgID names a message of the workload.
type msgID struct {
	key string
	seq int
}

// Check judges a history as OpenChaos does: every acknowledged message
// must be delivered (lost otherwise); a message delivered more than once
// is duplicated; and the acknowledged messages of one key, which all go
// to one queue, must be stored in the order they were sent. The order is
// that of the queue offsets the consumer saw, the order an orderly
// consumer would deliver them in, so concurrent consumption on the
// client does not count as a violation.
func Check(sends []Send, deliveries []Delivery) Verdict {
	var v Verdict
	acked := map[msgID]bool{}
	for _, s := range sends {
		id := msgID{s.Key, s.Seq}
		if s.Acked {
			acked[id] = true
		} else if !acked[id] {
			acked[id] = false
		}
	}
	for _, ok := range acked {
		if ok {
			v.Acked++
		} else {
			v.Failed++
		}
	}
	count := map[msgID]int{}
	// first is each message's first delivery: where the queue holds it.
	first := map[msgID]Delivery{}
	for _, d := range deliveries {
		id := msgID{d.Key, d.Seq}
		if count[id] == 0 {
			first[id] = d
		}
		count[id]++
	}
	for id, n := range count {
		v.Consumed++
		if n > 1 {
			v.Duplicated++
		}
		if ok, sent := acked[id]; !ok && sent {
			v.UnackedConsumed++
		}
	}
	for id, ok := range acked {
		if ok && count[id] == 0 {
			v.Lost++
		}
	}
	type place struct {
		group  string
		queue  int
		offset int64
		at     time.Time
		seq    int
	}
	byKey := map[string][]place{}
	for id, d := range first {
		if !acked[id] {
			continue
		}
		byKey[id.key] = append(byKey[id.key], place{d.Group, d.Queue, d.Offset, d.At, id.seq})
	}
	for _, ps := range byKey {
		slices.SortFunc(ps, func(a, b place) int {
			return cmp.Or(cmp.Compare(a.group, b.group), cmp.Compare(a.queue, b.queue),
				cmp.Compare(a.offset, b.offset), a.at.Compare(b.at), cmp.Compare(a.seq, b.seq))
		})
		for i := 1; i < len(ps); i++ {
			same := ps[i].group == ps[i-1].group && ps[i].queue == ps[i-1].queue
			if same && ps[i].seq < ps[i-1].seq {
				v.OrderViolations++
			}
		}
	}
	return v
}

// Recovery returns when the workload's writes to group recovered from a
// fault at t: the end of the first acknowledged send that started after
// the first send to group that failed after t ended (after t itself when
// none failed) and that a member other than not stored. The second
// result is false when there is none.
func Recovery(sends []Send, group string, t time.Time, not string) (time.Time, bool) {
	from := t
	var firstFail time.Time
	for _, s := range sends {
		if !s.Acked && s.Group == group && !s.Start.Before(t) && (firstFail.IsZero() || s.End.Before(firstFail)) {
			firstFail = s.End
		}
	}
	if !firstFail.IsZero() {
		from = firstFail
	}
	var best time.Time
	for _, s := range sends {
		if s.Acked && s.Group == group && !s.Start.Before(from) && (not == "" || s.By != not) && (best.IsZero() || s.End.Before(best)) {
			best = s.End
		}
	}
	return best, !best.IsZero()
}

// AcksBy counts the sends to group started at or after t that member
// addr acknowledged.
func AcksBy(sends []Send, group string, t time.Time, addr string) int {
	n := 0
	for _, s := range sends {
		if s.Acked && s.Group == group && !s.Start.Before(t) && s.By == addr {
			n++
		}
	}
	return n
}

// storeHost returns the ip:port an offset message id names: 16 bytes in
// hexadecimal, the IPv4 address, the port (4 bytes) and the commit-log
// offset.
func storeHost(offsetMsgID string) string {
	b, err := hex.DecodeString(offsetMsgID)
	if err != nil || len(b) != 16 {
		return ""
	}
	return net.JoinHostPort(netip.AddrFrom4([4]byte(b[:4])).String(), strconv.Itoa(int(binary.BigEndian.Uint32(b[4:8]))))
}

// WriteGap returns the longest stretch of time in [from, to] in which no
// send to any group was acknowledged.
func WriteGap(sends []Send, from, to time.Time) time.Duration {
	var ends []time.Time
	for _, s := range sends {
		if s.Acked && !s.End.Before(from) && !s.End.After(to) {
			ends = append(ends, s.End)
		}
	}
	slices.SortFunc(ends, time.Time.Compare)
	gap, last := time.Duration(0), from
	for _, e := range append(ends, to) {
		gap = max(gap, e.Sub(last))
		last = e
	}
	return gap
}
