package engine

import (
	"context"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

// kinds lists the kinds of ds, in order.
func kinds(ds []Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Kind.String()
	}
	return out
}

func sameKinds(got []Delivery, want ...string) bool {
	k := kinds(got)
	if len(k) != len(want) {
		return false
	}
	for i := range k {
		if k[i] != want[i] {
			return false
		}
	}
	return true
}

// A pull consumer fails a message once, gets it again from the retry
// topic and consumes it; another message fails until it is a dead letter.
// The group's history of each holds every delivery and its outcome.
func TestDeliveriesPullRetryCommitDeadLetter(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 1)
	if err := e.CreateGroup(meta.Group{Name: "G", MaxAttempts: 2, RetryBackoff: []time.Duration{20 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	addr := netip.MustParseAddrPort("10.0.0.7:4242")
	ctx := hook.NewContext(context.Background(), &hook.Client{Protocol: "remoting", ID: "c1", Addr: addr, Group: "G"})
	ok, err := e.Send(ctx, newMsg("T", "fails once"))
	if err != nil {
		t.Fatal(err)
	}
	dead, err := e.Send(ctx, newMsg("T", "always fails"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := e.Pull(ctx, "T", 0, 0, 32, nil)
	if err != nil || len(res.Records) != 2 {
		t.Fatalf("pull: %v, %d records", err, len(res.Records))
	}
	res.Release()
	first, _ := e.MessageByID(ok.MsgID)
	second, _ := e.MessageByID(dead.MsgID)
	for _, m := range []*message.Message{first, second} {
		if err := e.SendBack(ctx, "G", m.CommitLogOffset, SendBackOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.CommitOffset("G", "T", 0, 2); err != nil {
		t.Fatal(err)
	}
	if err := e.CommitOffset("G", "T", 0, 2); err != nil { // moves nothing: not recorded
		t.Fatal(err)
	}
	// Both come back from the retry topic; the first is consumed, the
	// second fails its last attempt.
	retry := message.RetryTopic("G")
	waitMessages(t, e, retry, 0, 2, 5*time.Second)
	res, err = e.Pull(ctx, retry, 0, 0, 32, nil)
	if err != nil || len(res.Records) != 2 {
		t.Fatalf("pull of the retry topic: %v, %d records", err, len(res.Records))
	}
	var deadCopy *message.Message
	for _, rec := range res.Records {
		m, _, err := message.DecodeStored(rec)
		if err != nil {
			t.Fatal(err)
		}
		if m.UniqKey() == dead.MsgID {
			deadCopy = m
		}
	}
	res.Release()
	if err := e.SendBack(ctx, "G", deadCopy.CommitLogOffset, SendBackOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.CommitOffset("G", retry, 0, 2); err != nil {
		t.Fatal(err)
	}

	got := e.Deliveries("G", first)
	if !sameKinds(got, "pull", "retry", "commit", "pull", "commit") {
		t.Fatalf("history of the message failed once: %v\n%+v", kinds(got), got)
	}
	if p := got[0]; p.Topic != "T" || p.From != 0 || p.To != 1 || p.Protocol != "remoting" || p.Client != "c1" || p.Addr != addr {
		t.Errorf("first pull: %+v", p)
	}
	if r := got[1]; r.Attempt != 2 || r.Delay != 20*time.Millisecond || r.ID != ok.MsgID {
		t.Errorf("retry: %+v", r)
	}
	if c := got[2]; c.Topic != "T" || c.To != 2 {
		t.Errorf("commit: %+v", c)
	}
	if p, c := got[3], got[4]; p.Topic != retry || p.ID != ok.MsgID || c.Topic != retry || c.To != 2 {
		t.Errorf("redelivery and its commit: %+v, %+v", p, c)
	}
	got = e.Deliveries("G", second)
	if !sameKinds(got, "pull", "retry", "commit", "pull", "dead-letter", "commit") {
		t.Fatalf("history of the dead letter: %v\n%+v", kinds(got), got)
	}
	if d := got[4]; d.Attempt != 2 || d.ID != dead.MsgID || d.Topic != retry {
		t.Errorf("dead letter: %+v", d)
	}
	if got := e.Deliveries("other", first); len(got) != 0 {
		t.Errorf("another group's history: %+v", got)
	}
}

// A pop consumer's deliveries, its negative acknowledgement and its ack.
func TestDeliveriesPopInvisibleAck(t *testing.T) {
	e, _, got := historyFixture(t, t.TempDir())
	defer e.Close()
	if got[0].Attempt != 1 || got[2].Attempt != 2 || got[0].Client != "c2" || got[3].Protocol != "grpc" {
		t.Errorf("history: %+v", got)
	}
}

// The history keeps the latest records of a group, and a bounded number
// of groups.
func TestDeliveriesBounded(t *testing.T) {
	var d deliveries
	for i := range deliveryRing + 10 {
		d.add("G", Delivery{Kind: DeliveryPull, Topic: "T", From: int64(i), To: int64(i)})
	}
	all := d.all("G")
	if len(all) != deliveryRing || all[0].From != 10 || all[len(all)-1].From != deliveryRing+9 {
		t.Fatalf("%d records, from %d to %d", len(all), all[0].From, all[len(all)-1].From)
	}
	for i := range deliveryGroups + 5 {
		d.add("g"+strconv.Itoa(i), Delivery{Kind: DeliveryPull})
	}
	if n := d.count.Load(); n != deliveryGroups {
		t.Fatalf("%d groups kept", n)
	}
	if d.dropped.Load() != 6 { // "G" was the first
		t.Fatalf("%d records dropped", d.dropped.Load())
	}
	d.add("", Delivery{Kind: DeliveryPull})
	if len(d.all("")) != 0 {
		t.Fatal("a record without a group was kept")
	}

	// Records in all: a group that finds them taken keeps its latest in
	// what it has, and one that has none keeps nothing.
	d = deliveries{limit: 5}
	for i := range 4 {
		d.add("A", Delivery{Kind: DeliveryPull, From: int64(i)})
	}
	for i := range 4 {
		d.add("B", Delivery{Kind: DeliveryPull, From: int64(i)})
	}
	d.add("C", Delivery{Kind: DeliveryPull})
	for i := 4; i < 7; i++ {
		d.add("A", Delivery{Kind: DeliveryPull, From: int64(i)})
	}
	var froms []int64
	for _, r := range d.all("A") {
		froms = append(froms, r.From)
	}
	if !slices.Equal(froms, []int64{3, 4, 5, 6}) {
		t.Errorf("A keeps %v, want its latest 4 in the 4 slots it took", froms)
	}
	if b, c := d.all("B"), d.all("C"); len(b) != 1 || b[0].From != 3 || len(c) != 0 {
		t.Errorf("B keeps %+v (want its latest in the one slot left), C %+v (want none)", b, c)
	}
	if n := d.slots.Load(); n != 5 {
		t.Errorf("%d slots taken, want 5", n)
	}
}

// BenchmarkRecordPull is what recording a pull of 32 messages adds to it:
// one record for the range, in the group's ring.
func BenchmarkRecordPull(b *testing.B) {
	e := &Engine{}
	e.history.opened = time.Now()
	recs := make([][]byte, 32)
	for i := range recs {
		rec, err := message.AppendStored(nil, &message.Message{Topic: "T", Body: []byte("x"), QueueOffset: int64(i)})
		if err != nil {
			b.Fatal(err)
		}
		recs[i] = rec
	}
	ctx := hook.NewContext(context.Background(), &hook.Client{Protocol: "remoting", ID: "c", Group: "G"})
	b.ReportAllocs()
	for b.Loop() {
		e.recordPull(ctx, "G", "T", 0, recs)
	}
}

// BenchmarkRecordPop is what recording the 32 messages of a pop, and
// their acks in a batch, adds to them: a record each.
func BenchmarkRecordPop(b *testing.B) {
	e := &Engine{}
	e.history.opened = time.Now()
	popped := make([]PoppedMessage, 32)
	offs := make([]int64, 32)
	for i := range popped {
		popped[i] = PoppedMessage{Queue: 0, Offset: int64(i), Attempt: 1}
		offs[i] = int64(i)
	}
	ctx := hook.NewContext(context.Background(), &hook.Client{Protocol: "grpc", ID: "c", Group: "G"})
	b.ReportAllocs()
	for b.Loop() {
		e.recordPops(ctx, "G", "T", popped)
		e.recordAcks(ctx, "G", "T", 0, offs)
	}
}

// A pull whose filter skipped messages of its range records only those it
// delivered.
func TestDeliveriesFilteredPull(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := hook.NewContext(context.Background(), &hook.Client{Protocol: "remoting", Group: "G"})
	var ids []string
	for _, tag := range []string{"a", "b", "a"} {
		m := newMsg("T", "x")
		m.SetTags(tag)
		res, err := e.Send(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.MsgID)
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	f, err := TagFilter("a")
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Pull(ctx, "T", 0, 0, 32, f)
	if err != nil || len(res.Records) != 2 {
		t.Fatalf("pull: %v, %d records", err, len(res.Records))
	}
	res.Release()
	for i, id := range ids {
		m, err := e.MessageByID(id)
		if err != nil {
			t.Fatal(err)
		}
		got := e.Deliveries("G", m)
		if want := i != 1; (len(got) == 1) != want || want && (got[0].From != int64(i) || got[0].To != int64(i)) {
			t.Errorf("message %d (tag %s): history %+v, delivered %v", i, m.Tags(), got, want)
		}
	}
}

// BenchmarkRecordAck is what recording one Ack adds to it.
func BenchmarkRecordAck(b *testing.B) {
	e := &Engine{}
	e.history.opened = time.Now()
	ctx := hook.NewContext(context.Background(), &hook.Client{Protocol: "grpc", ID: "c", Group: "G"})
	b.ReportAllocs()
	var off int64
	for b.Loop() {
		o := [1]int64{off}
		e.recordAcks(ctx, "G", "T", 0, o[:])
		off++
	}
}
