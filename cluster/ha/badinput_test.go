package ha

import (
	"bufio"
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/epoch"
	msg "github.com/karmanmq/karman/engine/message"
)

// A replica that asks for the log from an offset the master cannot send
// from is refused with the reason, and the master's log is untouched.
func TestMasterRefusesBadStart(t *testing.T) {
	ctx := context.Background()
	master := openEngine(t, engine.Options{})
	if err := master.Promote(ctx, 1); err != nil {
		t.Fatal(err)
	}
	send(t, master, 5, "m")
	end := logEnd(master)
	addr := serve(t, NewMaster(MasterOptions{BrokerName: "broker-a", SegmentSize: segSize, Logger: quiet}), master)
	for _, tc := range []struct {
		name   string
		offset int64
		reason string
	}{
		{"past the master's end", end + 64, "past the master's end"},
		{"inside a record", 8, "not where a record starts"},
		{"not aligned", 3, "not where a record starts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			hello := message{typ: typeHello, version: Version, brokerName: "broker-a", replicaID: "r", segmentSize: segSize, end: tc.offset}
			if _, err := c.Write(hello.encode(nil)); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(c)
			if w, _, err := readMessage(r, nil); err != nil || w.typ != typeWelcome {
				t.Fatalf("welcome: %+v, %v", w, err)
			}
			if _, err := c.Write((&message{typ: typeAck, offset: tc.offset}).encode(nil)); err != nil {
				t.Fatal(err)
			}
			m, _, err := readMessage(r, nil)
			if err != nil || m.typ != typeRefuse || !strings.Contains(m.reason, tc.reason) {
				t.Fatalf("answer %+v, %v; want a refusal saying %q", m, err, tc.reason)
			}
			if logEnd(master) != end {
				t.Fatalf("the master's log ends at %d, was %d", logEnd(master), end)
			}
		})
	}
}

// A replica refuses transfers it must not store — of an epoch older than
// its own, of an epoch that starts elsewhere than it recorded, with a gap
// before them or damaged — ends the session with the reason and keeps
// its log as it was.
func TestReplicaRefusesBadTransfers(t *testing.T) {
	ctx := context.Background()
	src := openEngine(t, engine.Options{})
	if err := src.Promote(ctx, 3); err != nil {
		t.Fatal(err)
	}
	send(t, src, 3, "m")
	// The log's three records, one by one.
	var recs [][]byte
	var offs []int64
	for off := int64(0); off < logEnd(src); {
		f, next, err := src.ReadFrames(off, nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		recs, offs = append(recs, f), append(offs, off)
		off = next
	}
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	damaged := append([]byte(nil), recs[1]...)
	damaged[len(damaged)/2] ^= 0x10
	for _, tc := range []struct {
		name   string
		ep     epoch.Entry
		off    int64
		frames []byte
		target error
	}{
		{"stale epoch", epoch.Entry{Epoch: 2, Start: 0}, offs[1], recs[1], engine.ErrStaleEpoch},
		{"epoch starting elsewhere", epoch.Entry{Epoch: 3, Start: 8}, offs[1], recs[1], engine.ErrEpochMismatch},
		{"a gap", epoch.Entry{Epoch: 3, Start: 0}, offs[2], recs[2], engine.ErrNotAtEnd},
		{"damaged frames", epoch.Entry{Epoch: 3, Start: 0}, offs[1], damaged, engine.ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replica := openEngine(t, engine.Options{Replica: true})
			// The replica holds the first record, of epoch 3 from 0.
			if _, err := replica.Replicate(epoch.Entry{Epoch: 3, Start: 0}, 0, recs[0]); err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go fakeMaster(ln, []epoch.Entry{{Epoch: 3, Start: 0}}, logEnd(src), message{typ: typeTransfer, epoch: tc.ep, offset: tc.off, end: logEnd(src), frames: tc.frames})
			err = NewReplica(replica, ReplicaOptions{BrokerName: "broker-a", SegmentSize: segSize, Logger: quiet}).Session(ctx, ln.Addr().String())
			if !errors.Is(err, tc.target) {
				t.Fatalf("Session: %v, want %v", err, tc.target)
			}
			if logEnd(replica) != offs[1] || !slices.Equal(replica.Epochs(), []epoch.Entry{{Epoch: 3, Start: 0}}) {
				t.Fatalf("the replica ends at %d with epochs %v after a refused transfer, want %d and epoch 3 from 0", logEnd(replica), replica.Epochs(), offs[1])
			}
		})
	}
}

// fakeMaster accepts one replica on ln, welcomes it with epochs and end,
// reads its start and sends it transfer; it then waits for the replica
// to close the connection.
func fakeMaster(ln net.Listener, epochs []epoch.Entry, end int64, transfer message) {
	c, err := ln.Accept()
	if err != nil {
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	if _, _, err := readMessage(r, nil); err != nil { // hello
		return
	}
	if _, err := c.Write((&message{typ: typeWelcome, segmentSize: segSize, end: end, epochs: epochs}).encode(nil)); err != nil {
		return
	}
	if _, _, err := readMessage(r, nil); err != nil { // where it starts
		return
	}
	if _, err := c.Write(transfer.encode(nil)); err != nil {
		return
	}
	for {
		if _, _, err := readMessage(r, nil); err != nil {
			return
		}
	}
}

// A master promoted to a new epoch with too little room left in its
// segment for its next record writes that record at the next segment's
// base; a replica following the stream takes the epoch there and goes on.
func TestStreamEpochAtSegmentEnd(t *testing.T) {
	ctx := context.Background()
	master := openEngine(t, engine.Options{})
	if err := master.Promote(ctx, 1); err != nil {
		t.Fatal(err)
	}
	replica := openEngine(t, engine.Options{Replica: true})
	addr := serve(t, NewMaster(MasterOptions{BrokerName: "broker-a", SegmentSize: segSize, Logger: quiet}), master)
	body := []byte(strings.Repeat("x", 1000))
	sendOne := func() {
		t.Helper()
		if _, err := master.SendToQueue(ctx, &msg.Message{Topic: "T", Body: body}, 0); err != nil {
			t.Fatal(err)
		}
	}
	sendOne()
	frame := logEnd(master)
	for segSize-logEnd(master)%segSize >= frame { // fill the segment
		sendOne()
	}
	stop := follow(t, NewReplica(replica, ReplicaOptions{BrokerName: "broker-a", SegmentSize: segSize, Logger: quiet}), addr)
	eventually(t, "the replica holds the first epoch", func() bool { return logEnd(replica) == logEnd(master) })
	if err := master.Promote(ctx, 2); err != nil {
		t.Fatal(err)
	}
	sendOne()
	if logEnd(master) != segSize+frame {
		t.Fatalf("the master ends at %d, want its epoch's first record at the next segment's base %d", logEnd(master), segSize)
	}
	for range 3 {
		sendOne()
	}
	deadline := time.Now().Add(10 * time.Second)
	for logEnd(replica) != logEnd(master) {
		if time.Now().After(deadline) {
			t.Fatalf("the replica stays at %d (master %d): %v", logEnd(replica), logEnd(master), stop())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !slices.Equal(master.Epochs(), replica.Epochs()) {
		t.Fatalf("epochs %v on the master, %v on the replica", master.Epochs(), replica.Epochs())
	}
}
