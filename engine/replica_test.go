package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/epoch"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

// copyLog replicates what master holds beyond replica's end into
// replica, as the replication stream does: frames of one epoch at a time.
func copyLog(t testing.TB, master, replica *Engine) {
	t.Helper()
	if err := copyFrames(master, replica, nil); err != nil {
		t.Fatal(err)
	}
	if err := replica.WaitDispatched(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// copyFrames is copyLog without a test; acked, when not nil, is called
// with the replica's end after each Replicate.
func copyFrames(master, replica *Engine, acked func(end int64)) error {
	if err := master.WaitDispatched(context.Background()); err != nil {
		return err
	}
	eps := master.Epochs()
	_, end := master.LogRange()
	var buf []byte
	for off := replicaEnd(replica); off < end; {
		// The epoch of the records at off, and where it ends.
		i := len(eps) - 1
		for i > 0 && eps[i].Start > off {
			i--
		}
		stop := epoch.EndOf(eps, i, end)
		frames, next, err := master.ReadFrames(off, buf[:0], 64<<10)
		if err != nil {
			return fmt.Errorf("ReadFrames(%d): %w", off, err)
		}
		at := off
		if len(frames) == 0 {
			at = next
		}
		if next > stop { // a batch never spans epochs
			if stop < off || stop-off > int64(len(frames)) {
				return fmt.Errorf("cannot cut %d bytes of frames at %d at %d", len(frames), off, stop)
			}
			frames, next = frames[:stop-off], stop
		}
		rend, err := replica.Replicate(eps[i], at, frames)
		if err != nil {
			return fmt.Errorf("Replicate(%v, %d, %d bytes): %w", eps[i], at, len(frames), err)
		}
		if acked != nil {
			acked(rend)
		}
		buf = frames
		off = next
	}
	return nil
}

func replicaEnd(e *Engine) int64 { _, end := e.LogRange(); return end }

func atOffsets(ms []*message.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%d:%s", m.QueueOffset, m.Body))
	}
	return out
}

func TestReplicaIsAWarmStandby(t *testing.T) {
	ctx := context.Background()
	o := func(replica bool) *Options { return &Options{SegmentSize: 64 << 10, Replica: replica} }
	master := openTest(t, t.TempDir(), o(false))
	defer master.Close()
	replica := openTest(t, t.TempDir(), o(true))
	defer replica.Close()
	if err := master.Promote(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for _, e := range []*Engine{master, replica} { // the metadata sync's part
		mustTopic(t, e, "T", 2)
	}
	for i := range 300 { // a few segments
		m := newMsg("T", fmt.Sprintf("m%03d-%0900d", i, i), message.PropertyKeys, fmt.Sprintf("k%d", i%7))
		if _, err := master.SendToQueue(ctx, m, int32(i%2)); err != nil {
			t.Fatal(err)
		}
	}
	copyLog(t, master, replica)

	// The replica serves what the master does, from its own indexes.
	for q := range int32(2) {
		want, got := atOffsets(pullAll(t, master, "T", q, 0, nil)), atOffsets(pullAll(t, replica, "T", q, 0, nil))
		if len(want) != 150 || !slices.Equal(want, got) {
			t.Fatalf("queue %d: the replica serves %d messages, the master %d, or they differ", q, len(got), len(want))
		}
	}
	byKey, err := replica.MessagesByKey("T", "k3", 0, time.Now().Add(time.Hour).UnixMilli(), 100)
	if err != nil || len(byKey) != 43 {
		t.Fatalf("the replica finds %d messages by key (%v), want 43", len(byKey), err)
	}
	if !slices.Equal(master.Epochs(), replica.Epochs()) {
		t.Fatalf("epochs %v on the master, %v on the replica", master.Epochs(), replica.Epochs())
	}

	// It refuses writes; the master refuses replicated records.
	if _, err := replica.Send(ctx, newMsg("T", "x")); !errors.Is(err, ErrNotMaster) {
		t.Fatalf("Send on a replica: %v, want ErrNotMaster", err)
	}
	if _, err := master.Replicate(epoch.Entry{Epoch: 1}, replicaEnd(master), nil); !errors.Is(err, ErrNotReplica) {
		t.Fatalf("Replicate on a master: %v, want ErrNotReplica", err)
	}

	// Promoted, it goes on with the next queue offsets, in epoch 2.
	end := replicaEnd(replica)
	if err := replica.Promote(ctx, 2); err != nil {
		t.Fatal(err)
	}
	res, err := replica.SendToQueue(ctx, newMsg("T", "after"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.QueueOffset != 150 || res.CommitLogOffset != end {
		t.Fatalf("first send after promotion at queue offset %d, log offset %d; want 150, %d", res.QueueOffset, res.CommitLogOffset, end)
	}
	if want := []epoch.Entry{{Epoch: 1, Start: 0}, {Epoch: 2, Start: end}}; !slices.Equal(replica.Epochs(), want) {
		t.Fatalf("epochs %v, want %v", replica.Epochs(), want)
	}
	if err := replica.Promote(ctx, 2); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("Promote to the same epoch: %v, want ErrStaleEpoch", err)
	}
}

func TestReplicateRefuses(t *testing.T) {
	ctx := context.Background()
	master := openTest(t, t.TempDir(), nil)
	defer master.Close()
	if err := master.Promote(ctx, 3); err != nil {
		t.Fatal(err)
	}
	mustTopic(t, master, "T", 1)
	for i := range 3 {
		if _, err := master.Send(ctx, newMsg("T", strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	frames, _, err := master.ReadFrames(0, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	bad := slices.Clone(frames)
	bad[len(bad)/2] ^= 0x40
	ep := epoch.Entry{Epoch: 3, Start: 0}
	for _, tc := range []struct {
		name   string
		ep     epoch.Entry
		off    int64
		frames []byte
		target error
	}{
		{"damaged frames", ep, 0, bad, ErrInvalidArgument},
		{"new epoch not at its start", epoch.Entry{Epoch: 3, Start: 8}, 0, frames, ErrEpochMismatch},
		{"not at the end", epoch.Entry{Epoch: 3, Start: int64(len(frames))}, int64(len(frames)), frames, ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := openTest(t, t.TempDir(), &Options{Replica: true})
			defer r.Close()
			if _, err := r.Replicate(tc.ep, tc.off, tc.frames); !errors.Is(err, tc.target) {
				t.Fatalf("Replicate: %v, want %v", err, tc.target)
			}
			if replicaEnd(r) != 0 || len(r.Epochs()) != 0 {
				t.Fatalf("a refused replication left end %d, epochs %v", replicaEnd(r), r.Epochs())
			}
		})
	}
	// Epochs once one is known.
	r := openTest(t, t.TempDir(), &Options{Replica: true})
	defer r.Close()
	if _, err := r.Replicate(ep, 0, frames); err != nil {
		t.Fatal(err)
	}
	end := replicaEnd(r)
	if _, err := r.Replicate(epoch.Entry{Epoch: 2, Start: 0}, end, nil); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("an older epoch: %v, want ErrStaleEpoch", err)
	}
	if _, err := r.Replicate(epoch.Entry{Epoch: 3, Start: 16}, end, nil); !errors.Is(err, ErrEpochMismatch) {
		t.Fatalf("the epoch starting elsewhere: %v, want ErrEpochMismatch", err)
	}
	if _, err := r.Replicate(ep, end+8, nil); !errors.Is(err, ErrNotAtEnd) {
		t.Fatalf("a gap: %v, want ErrNotAtEnd", err)
	}
}

// An old master that comes back as a replica cuts what its successor
// never had, and then holds exactly the successor's log.
func TestReturningMasterTruncates(t *testing.T) {
	ctx := context.Background()
	a := openTest(t, t.TempDir(), &Options{SegmentSize: 64 << 10})
	defer a.Close()
	b := openTest(t, t.TempDir(), &Options{SegmentSize: 64 << 10, Replica: true})
	defer b.Close()
	if err := a.Promote(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for _, e := range []*Engine{a, b} {
		mustTopic(t, e, "T", 1)
	}
	send := func(e *Engine, body string) {
		t.Helper()
		key, _, _ := strings.Cut(body, "-")
		if _, err := e.Send(ctx, newMsg("T", body, message.PropertyKeys, key)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 100 {
		send(a, fmt.Sprintf("a%d-%0500d", i, 0))
	}
	copyLog(t, a, b)
	for i := range 50 { // a's last writes: never replicated
		send(a, fmt.Sprintf("lost%d-%0500d", i, 0))
	}
	f, err := a.Follow(replicaEnd(b))
	if err != nil {
		t.Fatal(err)
	}
	for f.Position() < replicaEnd(a) { // it reads the lost records
		if _, err := f.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// One follower waits past the cut while it happens.
	waiting := make(chan error, 1)
	go func() {
		_, err := f.Next(ctx)
		waiting <- err
	}()
	// a dies; b takes over at epoch 2 and takes writes of its own.
	if err := a.Demote(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Send(ctx, newMsg("T", "x")); !errors.Is(err, ErrNotMaster) {
		t.Fatalf("Send on a demoted master: %v", err)
	}
	if err := b.Promote(ctx, 2); err != nil {
		t.Fatal(err)
	}
	for i := range 80 {
		send(b, fmt.Sprintf("b%d-%0500d", i, 0))
	}
	// a returns: the consistent point is where b's epoch began.
	_, aEnd := a.LogRange()
	_, bEnd := b.LogRange()
	point, ok := epoch.ConsistentPoint(a.Epochs(), aEnd, b.Epochs(), bEnd)
	if !ok || point != b.Epochs()[1].Start {
		t.Fatalf("consistent point %d, %v; want %d", point, ok, b.Epochs()[1].Start)
	}
	if err := a.Truncate(point + 8); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Truncate inside a record: %v, want ErrInvalidArgument", err)
	}
	if err := a.Truncate(point); err != nil {
		t.Fatal(err)
	}
	if err := <-waiting; !errors.Is(err, ErrLogTruncated) {
		t.Fatalf("a follower past the cut: %v, want ErrLogTruncated", err)
	}
	copyLog(t, b, a)
	want, got := atOffsets(pullAll(t, b, "T", 0, 0, nil)), atOffsets(pullAll(t, a, "T", 0, 0, nil))
	if len(want) != 180 || !slices.Equal(want, got) {
		t.Fatalf("after the cut a serves %d messages, b %d, or they differ", len(got), len(want))
	}
	for _, key := range []string{"lost3", "b3"} {
		ms, err := a.MessagesByKey("T", key, 0, time.Now().Add(time.Hour).UnixMilli(), 10)
		if err != nil || len(ms) != map[string]int{"lost3": 0, "b3": 1}[key] {
			t.Fatalf("key %s: %d messages (%v)", key, len(ms), err)
		}
	}
	if !slices.Equal(a.Epochs(), b.Epochs()) {
		t.Fatalf("epochs %v on a, %v on b", a.Epochs(), b.Epochs())
	}
	if err := b.Truncate(0); !errors.Is(err, ErrNotReplica) {
		t.Fatalf("Truncate on a master: %v, want ErrNotReplica", err)
	}
}

// A replica holds timers and leaves them to the master; promoted, it
// delivers them.
func TestReplicaTimersWaitForPromotion(t *testing.T) {
	ctx := context.Background()
	master := openTest(t, t.TempDir(), nil)
	defer master.Close()
	replica := openTest(t, t.TempDir(), &Options{Replica: true})
	defer replica.Close()
	if err := master.Promote(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for _, e := range []*Engine{master, replica} {
		mustTopic(t, e, "T", 1)
	}
	due := time.Now().Add(300 * time.Millisecond)
	m := newMsg("T", "timed", message.PropertyTimerDeliverMS, strconv.FormatInt(due.UnixMilli(), 10))
	if _, err := master.Send(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := master.Demote(); err != nil { // the master dies before it is due
		t.Fatal(err)
	}
	copyLog(t, master, replica)
	end := replicaEnd(replica)
	// Past the due time the replica has written nothing.
	waitCtx, cancel := context.WithDeadline(ctx, due.Add(300*time.Millisecond))
	err := replica.WaitForArrival(waitCtx, "T", 0, 0)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || replicaEnd(replica) != end {
		t.Fatalf("the replica delivered a timer (%v, log end %d, was %d)", err, replicaEnd(replica), end)
	}
	if err := replica.Promote(ctx, 2); err != nil {
		t.Fatal(err)
	}
	got := waitMessages(t, replica, "T", 0, 1, 5*time.Second)
	if string(got[0].Body) != "timed" {
		t.Fatalf("delivered %q", got[0].Body)
	}
}

func TestApplyMetadata(t *testing.T) {
	ctx := context.Background()
	master := openTest(t, t.TempDir(), nil)
	defer master.Close()
	replica := openTest(t, t.TempDir(), &Options{Replica: true})
	defer replica.Close()
	mustTopic(t, master, "T", 2)
	if err := master.CreateGroup(meta.Group{Name: "g", MaxAttempts: 5}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := master.SendToQueue(ctx, newMsg("T", "x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := master.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	if err := master.CommitOffset("g", "T", 1, 2); err != nil {
		t.Fatal(err)
	}
	md, err := master.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if err := master.ApplyMetadata(md); !errors.Is(err, ErrNotReplica) {
		t.Fatalf("ApplyMetadata on a master: %v, want ErrNotReplica", err)
	}
	for range 2 { // applying twice changes nothing more
		if err := replica.ApplyMetadata(md); err != nil {
			t.Fatal(err)
		}
	}
	if tp, err := replica.Topic("T"); err != nil || tp.ReadQueues != 2 {
		t.Fatalf("topic on the replica: %+v, %v", tp, err)
	}
	if g, err := replica.Group("g"); err != nil || g.MaxAttempts != 5 {
		t.Fatalf("group on the replica: %+v, %v", g, err)
	}
	// The offset is ahead of what the replica holds: it is kept all the same.
	if off, err := replica.ConsumerOffset("g", "T", 1); err != nil || off != 2 {
		t.Fatalf("offset on the replica: %d, %v", off, err)
	}
	bad := Metadata{Topics: []meta.Topic{{Name: "bad topic name!", ReadQueues: 1, WriteQueues: 1}}, Offsets: md.Offsets}
	if err := replica.ApplyMetadata(bad); err == nil {
		t.Fatal("a topic with a bad name was applied")
	}
}

// Pop state and the receipt-handle key reach a replica with the
// metadata: promoted, it neither redelivers what the master's consumers
// acknowledged nor what they hold in flight, and acknowledges the
// handles the master issued.
func TestPopStateReachesReplica(t *testing.T) {
	ctx := context.Background()
	master, replica := popPair(t, 5)
	popped, err := master.Pop(ctx, PopOptions{Group: "g", Topic: "T", Max: 3, Invisible: time.Minute})
	if err != nil || len(popped) != 3 {
		t.Fatalf("pop on the master: %d messages, %v", len(popped), err)
	}
	if err := master.Ack(ctx, "g", popped[0].Handle); err != nil {
		t.Fatal(err)
	}
	md, err := master.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if len(md.PopStates) != 1 || len(md.PopHandleKey) == 0 {
		t.Fatalf("metadata holds %d pop states and a %d-byte handle key", len(md.PopStates), len(md.PopHandleKey))
	}
	copyLog(t, master, replica)
	if err := replica.ApplyMetadata(md); err != nil {
		t.Fatal(err)
	}
	if err := replica.Promote(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// The master's handle of the second message acknowledges it here.
	if err := replica.Ack(ctx, "g", popped[1].Handle); err != nil {
		t.Fatalf("the master's handle on the promoted replica: %v", err)
	}
	// The first is acknowledged and the third in flight: only 3 and 4
	// are delivered.
	again, err := replica.Pop(ctx, PopOptions{Group: "g", Topic: "T", Max: 10, Invisible: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for _, p := range again {
		offs = append(offs, p.Offset)
	}
	if fmt.Sprint(offs) != "[3 4]" {
		t.Fatalf("the promoted replica delivered offsets %v, want [3 4]", offs)
	}

	// A bad pop state in the metadata is refused with the rest applied.
	bad := Metadata{PopStates: []meta.PopRecord{{Group: "g", Topic: "T", Queue: 0, State: []byte("garbage")}}}
	other := openTest(t, t.TempDir(), &Options{Replica: true})
	defer other.Close()
	if err := other.ApplyMetadata(bad); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a corrupt pop state: %v, want ErrInvalidArgument", err)
	}
}

// A master promoted when its segment has too little room left for its
// next record starts the epoch at its end, in that segment, and writes
// the epoch's first record at the next segment's base. Its replica takes
// the epoch there, both as an empty transfer at the base (copyFrames) and
// with the first frames (the stream, which skips the segment's end), and
// records it where the master did.
func TestReplicateEpochStartingAtASegmentEnd(t *testing.T) {
	const seg = 64 << 10
	for _, tc := range []struct {
		name  string
		empty bool // an empty transfer at the base first
	}{{"empty transfer at the base", true}, {"frames at the base", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			master := openTest(t, t.TempDir(), &Options{SegmentSize: seg})
			defer master.Close()
			replica := openTest(t, t.TempDir(), &Options{SegmentSize: seg, Replica: true})
			defer replica.Close()
			if err := master.Promote(ctx, 1); err != nil {
				t.Fatal(err)
			}
			for _, e := range []*Engine{master, replica} {
				mustTopic(t, e, "T", 1)
			}
			body := strings.Repeat("x", 1000)
			send := func() {
				t.Helper()
				if _, err := master.SendToQueue(ctx, newMsg("T", body), 0); err != nil {
					t.Fatal(err)
				}
			}
			send()
			frame := replicaEnd(master)
			for seg-replicaEnd(master)%seg >= frame { // fill the segment
				send()
			}
			if err := copyFrames(master, replica, nil); err != nil {
				t.Fatal(err)
			}
			start := replicaEnd(master)
			if err := master.Promote(ctx, 2); err != nil {
				t.Fatal(err)
			}
			send()
			if end := replicaEnd(master); end != seg+frame {
				t.Fatalf("the epoch's first record ends at %d, want it at the next segment's base %d (+%d)", end, seg, frame)
			}
			ep := epoch.Entry{Epoch: 2, Start: start}
			if tc.empty {
				if _, err := replica.Replicate(ep, seg, nil); err != nil {
					t.Fatalf("an empty transfer at the next segment's base: %v", err)
				}
			}
			frames, _, err := master.ReadFrames(seg, nil, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := replica.Replicate(ep, seg, frames); err != nil {
				t.Fatalf("the epoch's first frames at the next segment's base: %v", err)
			}
			if !slices.Equal(replica.Epochs(), master.Epochs()) || replicaEnd(replica) != replicaEnd(master) {
				t.Fatalf("the replica ends at %d with epochs %v; the master at %d with %v", replicaEnd(replica), replica.Epochs(), replicaEnd(master), master.Epochs())
			}
			// Nowhere else: an epoch starting before the log's end, or
			// with its records two segments on, is still refused.
			r2 := openTest(t, t.TempDir(), &Options{SegmentSize: seg, Replica: true})
			defer r2.Close()
			if _, err := r2.Replicate(epoch.Entry{Epoch: 1, Start: 0}, seg, nil); !errors.Is(err, ErrEpochMismatch) {
				t.Fatalf("an epoch starting at 0 offered at %d to an empty log: %v, want ErrEpochMismatch", seg, err)
			}
			if _, err := replica.Replicate(epoch.Entry{Epoch: 3, Start: replicaEnd(replica)}, 3*seg, nil); !errors.Is(err, ErrEpochMismatch) {
				t.Fatalf("an epoch whose records come two segments on: %v, want ErrEpochMismatch", err)
			}
		})
	}
}

// Pop state is the master's: a replica refuses pops, acknowledgements,
// invisibility changes and dead-lettering with ErrNotMaster (the code
// clients move on to the master for), before it changes anything, and
// serves pulls. Promoted, it takes them.
func TestReplicaRefusesPopWrites(t *testing.T) {
	ctx := context.Background()
	master, replica := popPair(t, 4)
	popped, err := master.Pop(ctx, PopOptions{Group: "g", Topic: "T", Max: 2, Invisible: time.Minute})
	if err != nil || len(popped) != 2 {
		t.Fatalf("pop on the master: %d messages, %v", len(popped), err)
	}
	md, err := master.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	copyLog(t, master, replica)
	if err := replica.ApplyMetadata(md); err != nil {
		t.Fatal(err)
	}
	h := popped[0].Handle
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"pop", func() error {
			_, err := replica.Pop(ctx, PopOptions{Group: "g", Topic: "T", Max: 10, Invisible: time.Minute, Wait: time.Minute})
			return err
		}},
		{"ack", func() error { return replica.Ack(ctx, "g", h) }},
		{"ack batch", func() error { return errors.Join(replica.AckBatch(ctx, "g", []string{h, popped[1].Handle})...) }},
		{"change invisible", func() error { _, err := replica.ChangeInvisible(ctx, "g", h, time.Second); return err }},
		{"dead letter", func() error { return replica.DeadLetter(ctx, "g", h) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, ErrNotMaster) {
				t.Fatalf("%s on a replica: %v, want ErrNotMaster", tc.name, err)
			}
		})
	}
	if n := len(pullAll(t, replica, "T", 0, 0, nil)); n != 4 {
		t.Fatalf("a pull from the replica: %d messages, want 4", n)
	}
	// Nothing the refused calls did stuck: promoted, the replica still
	// has both messages in flight under the master's handles, and the
	// other two to deliver.
	if err := replica.Promote(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := replica.Ack(ctx, "g", h); err != nil {
		t.Fatalf("ack on the promoted replica: %v", err)
	}
	again, err := replica.Pop(ctx, PopOptions{Group: "g", Topic: "T", Max: 10, Invisible: time.Minute})
	if err != nil || len(again) != 2 || again[0].Offset != 2 {
		t.Fatalf("pop on the promoted replica: %d messages, %v; want offsets 2 and 3", len(again), err)
	}
	// A demoted master refuses them too.
	if err := master.Demote(); err != nil {
		t.Fatal(err)
	}
	if err := master.Ack(ctx, "g", popped[1].Handle); !errors.Is(err, ErrNotMaster) {
		t.Fatalf("ack on a demoted master: %v, want ErrNotMaster", err)
	}
}

// popPair opens a master at epoch 1 holding n messages in queue 0 of
// topic T, with group g, and a replica that holds nothing yet.
func popPair(t *testing.T, n int) (master, replica *Engine) {
	t.Helper()
	ctx := context.Background()
	master = openTest(t, t.TempDir(), nil)
	t.Cleanup(func() { master.Close() })
	replica = openTest(t, t.TempDir(), &Options{Replica: true})
	t.Cleanup(func() { replica.Close() })
	if err := master.Promote(ctx, 1); err != nil {
		t.Fatal(err)
	}
	mustTopic(t, master, "T", 1)
	if err := master.CreateGroup(meta.Group{Name: "g", MaxAttempts: 5}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := master.SendToQueue(ctx, newMsg("T", fmt.Sprint("m", i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := master.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	return master, replica
}
