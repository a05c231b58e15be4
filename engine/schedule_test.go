package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/timer"
)

var testLevels = []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 600 * time.Millisecond}

// waitMessages pulls (topic, queue) from offset until it has n messages or
// the deadline passes, waiting for arrivals between pulls.
func waitMessages(t *testing.T, e *Engine, topic string, queue int32, n int, deadline time.Duration) []*message.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var out []*message.Message
	var off int64
	for len(out) < n {
		if err := e.WaitForArrival(ctx, topic, queue, off); err != nil {
			t.Fatalf("waiting for message %d of %d on %s/%d: %v", len(out)+1, n, topic, queue, err)
		}
		res, err := e.Pull(ctx, topic, queue, off, 32, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range res.Records {
			m, _, err := message.DecodeStored(rec)
			if err != nil {
				t.Fatal(err)
			}
			m.StoreTimestamp = time.Now().UnixMilli() // arrival as seen here
			out = append(out, m)
		}
		off = res.NextOffset
	}
	return out
}

func TestDelayLevels(t *testing.T) {
	e := openTest(t, t.TempDir(), &Options{DelayLevels: testLevels})
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	sent := map[string]time.Time{}
	for level := 1; level <= 4; level++ { // 4 is capped to 3
		m := newMsg("T", fmt.Sprint(level), message.PropertyDelayLevel, strconv.Itoa(level))
		sent[fmt.Sprint(level)] = time.Now()
		if _, err := e.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if max, _ := e.MaxOffset("T", 0); max != 0 {
		t.Fatalf("delayed messages visible at once: max offset %d", max)
	}
	got := waitMessages(t, e, "T", 0, 4, 5*time.Second)
	for _, m := range got {
		level, _ := strconv.Atoi(string(m.Body))
		want := testLevels[min(level, 3)-1]
		early := time.UnixMilli(m.StoreTimestamp).Sub(sent[string(m.Body)])
		if early < want {
			t.Errorf("level %d arrived after %s, before its delay %s", level, early, want)
		}
		if early > want+500*time.Millisecond {
			t.Errorf("level %d arrived after %s, delay %s", level, early, want)
		}
		if m.Properties[message.PropertyDelayLevel] != "" || m.Properties[message.PropertyRealTopic] != "" {
			t.Errorf("scheduling properties left on the delivered message: %v", m.Properties)
		}
	}
}

func TestTimerDeliverMS(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 2)
	ctx := context.Background()
	due := time.Now().Add(200 * time.Millisecond)
	m := newMsg("T", "timed", message.PropertyTimerDeliverMS, strconv.FormatInt(due.UnixMilli(), 10))
	res, err := e.SendToQueue(ctx, m, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := waitMessages(t, e, "T", 1, 1, 5*time.Second)
	if arrived := time.UnixMilli(got[0].StoreTimestamp); arrived.Before(due.Truncate(time.Millisecond)) {
		t.Fatalf("arrived %s before due", due.Sub(arrived))
	}
	if got[0].UniqKey() != res.MsgID {
		t.Fatalf("delivered id %s, sent %s", got[0].UniqKey(), res.MsgID)
	}
	// A time in the past is delivered at once.
	past := newMsg("T", "past", message.PropertyTimerDeliverMS, "1")
	if _, err := e.SendToQueue(ctx, past, 0); err != nil {
		t.Fatal(err)
	}
	waitMessages(t, e, "T", 0, 1, time.Second)
}

func TestScheduleBadInput(t *testing.T) {
	e := openTest(t, t.TempDir(), &Options{TimerHorizon: time.Hour})
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	far := strconv.FormatInt(time.Now().Add(2*time.Hour).UnixMilli(), 10)
	for name, m := range map[string]*message.Message{
		"non-numeric level": newMsg("T", "x", message.PropertyDelayLevel, "soon"),
		"beyond horizon":    newMsg("T", "x", message.PropertyTimerDeliverMS, far),
		"delay sec beyond":  newMsg("T", "x", message.PropertyTimerDelaySec, "99999999999"),
		"negative delay":    newMsg("T", "x", message.PropertyTimerDelayMS, "-5"),
		"garbage":           newMsg("T", "x", message.PropertyTimerDeliverMS, "12abc"),
	} {
		_, err := e.Send(ctx, m)
		if !errors.Is(err, ErrInvalidMessage) {
			t.Errorf("%s: %v, want ErrInvalidMessage", name, err)
		}
		beyond := name == "beyond horizon" || name == "delay sec beyond"
		if errors.Is(err, ErrBeyondTimerHorizon) != beyond {
			t.Errorf("%s: %v; ErrBeyondTimerHorizon is %v", name, err, !beyond)
		}
	}
	batch := []*message.Message{newMsg("T", "a"), newMsg("T", "b", message.PropertyDelayLevel, "1")}
	if _, err := e.SendBatch(ctx, batch, 0); !errors.Is(err, ErrInvalidMessage) {
		t.Errorf("delayed batch: %v", err)
	}
	if _, err := e.Send(ctx, newMsg(message.TopicTimer, "x")); !errors.Is(err, ErrReservedName) {
		t.Errorf("send to the timer topic: %v", err)
	}
}

func TestTimersSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	e := openTest(t, dir, nil)
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	due := time.Now().Add(300 * time.Millisecond)
	for i := range 20 {
		m := newMsg("T", fmt.Sprint(i), message.PropertyTimerDeliverMS, strconv.FormatInt(due.UnixMilli(), 10))
		if _, err := e.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	e.Close()
	time.Sleep(time.Until(due) + 100*time.Millisecond) // let them fall due while closed
	start := time.Now()
	e = openTest(t, dir, nil)
	defer e.Close()
	got := waitMessages(t, e, "T", 0, 20, 5*time.Second)
	if d := time.Since(start); d > time.Second {
		t.Errorf("overdue messages took %s after start", d)
	}
	seen := map[string]bool{}
	for _, m := range got {
		if seen[string(m.Body)] {
			t.Fatalf("message %s delivered twice", m.Body)
		}
		seen[string(m.Body)] = true
	}
	e.Close()
	e = openTest(t, dir, nil)
	defer e.Close()
	if max, _ := e.MaxOffset("T", 0); max != 20 {
		t.Fatalf("after another restart the queue holds %d, want 20 (no redelivery)", max)
	}
}

func TestRecall(t *testing.T) {
	e := openTest(t, t.TempDir(), &Options{DelayLevels: []time.Duration{300 * time.Millisecond}})
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	keep, _ := e.Send(ctx, newMsg("T", "keep", message.PropertyDelayLevel, "1"))
	drop, _ := e.Send(ctx, newMsg("T", "drop", message.PropertyDelayLevel, "1"))
	if err := e.Recall(ctx, "T", drop.MsgID); err != nil {
		t.Fatalf("recall: %v", err)
	}
	if err := e.Recall(ctx, "T", drop.MsgID); !errors.Is(err, ErrNotRecallable) {
		t.Fatalf("second recall: %v", err)
	}
	if err := e.Recall(ctx, "Other", keep.MsgID); !errors.Is(err, ErrNotRecallable) {
		t.Fatalf("recall under the wrong topic: %v", err)
	}
	if err := e.Recall(ctx, "T", "nope"); !errors.Is(err, ErrNotRecallable) {
		t.Fatalf("recall of an unknown id: %v", err)
	}
	got := waitMessages(t, e, "T", 0, 1, 5*time.Second)
	if string(got[0].Body) != "keep" {
		t.Fatalf("delivered %q", got[0].Body)
	}
	if err := e.Recall(ctx, "T", keep.MsgID); !errors.Is(err, ErrNotRecallable) {
		t.Fatalf("recall after delivery: %v", err)
	}
	time.Sleep(400 * time.Millisecond) // the recalled one would have been due by now
	if max, _ := e.MaxOffset("T", 0); max != 1 {
		t.Fatalf("recalled message delivered: queue holds %d", max)
	}
}

func TestManyTimers(t *testing.T) {
	e := openTest(t, t.TempDir(), &Options{SegmentSize: 16 << 20})
	defer e.Close()
	mustTopic(t, e, "T", 4)
	ctx := context.Background()
	const n = 10000
	base := time.Now().Add(200 * time.Millisecond)
	for i := range n {
		due := base.Add(time.Duration(i%1000) * time.Millisecond)
		m := newMsg("T", fmt.Sprint(i), message.PropertyTimerDeliverMS, strconv.FormatInt(due.UnixMilli(), 10))
		if _, err := e.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for q := range int32(4) {
		got := 0
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			max, _ := e.MaxOffset("T", q)
			if int(max) >= n/4 {
				got = int(max)
				break
			}
			c, cancel := context.WithDeadline(ctx, deadline)
			e.WaitForArrival(c, "T", q, max)
			cancel()
		}
		total += got
	}
	if total != n {
		t.Fatalf("%d of %d timer messages delivered", total, n)
	}
}

func TestDeliveredCopy(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 2)
	ctx := context.Background()
	due := time.Now().Add(100 * time.Millisecond).UnixMilli()
	m := newMsg("T", "body", message.PropertyTimerDeliverMS, strconv.FormatInt(due, 10), message.PropertyKeys, "k1", "custom", "x")
	m.Flag, m.ReconsumeTimes, m.BornTimestamp = 7, 2, 1_700_000_000_000
	m.SysFlag = message.SysFlagMultiTags
	m.BornHost = netip.MustParseAddrPort("[2001:db8::5]:4000")
	m.SetTags("TagA")
	res, err := e.SendToQueue(ctx, m, 1)
	if err != nil {
		t.Fatal(err)
	}
	waitMessages(t, e, "T", 1, 1, 5*time.Second)
	got := pullAll(t, e, "T", 1, 0, nil)
	c := got[0]
	if c.Topic != "T" || c.QueueID != 1 || c.QueueOffset != 0 || string(c.Body) != "body" || c.Flag != 7 || c.ReconsumeTimes != 2 ||
		c.BornTimestamp != m.BornTimestamp || c.BornHost != m.BornHost || c.SysFlag&^message.SysFlagBornHostV6 != m.SysFlag {
		t.Fatalf("delivered copy %+v", c)
	}
	if c.StoreTimestamp < due {
		t.Fatalf("stored at %d, due at %d", c.StoreTimestamp, due)
	}
	want := map[string]string{
		message.PropertyTags: "TagA", message.PropertyKeys: "k1", "custom": "x", message.PropertyUniqKey: res.MsgID,
		propertyTimerSource: fmt.Sprintf("%d,%d", due, res.CommitLogOffset), message.PropertyTimerDeliverMS: strconv.FormatInt(due, 10),
	}
	if !maps.Equal(c.Properties, want) {
		t.Fatalf("properties %v, want %v", c.Properties, want)
	}
	byID, err := e.MessageByID(res.MsgID)
	if err != nil || byID.Topic != "T" || byID.CommitLogOffset != c.CommitLogOffset {
		t.Fatalf("by id: %+v, %v", byID, err)
	}
	if pending, _ := e.timers.Has(timer.Entry{Due: due, Offset: res.CommitLogOffset}); pending {
		t.Fatal("the timer entry is still pending")
	}
}

// A message whose topic is gone by the time it falls due is dropped; the
// messages due with it are delivered, in order.
func TestDeliveryDropsWhatItCannotDeliver(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 1)
	mustTopic(t, e, "Gone", 1)
	ctx := context.Background()
	due := strconv.FormatInt(time.Now().Add(300*time.Millisecond).UnixMilli(), 10)
	var gone []SendResult
	for i := range 7 { // the last is delivered: the dropped ones are retired by then
		topic := "T"
		if i%2 == 1 {
			topic = "Gone"
		}
		res, err := e.Send(ctx, newMsg(topic, fmt.Sprint(i), message.PropertyTimerDeliverMS, due))
		if err != nil {
			t.Fatal(err)
		}
		if topic == "Gone" {
			gone = append(gone, res)
		}
	}
	if err := e.DeleteTopic("Gone"); err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, m := range waitMessages(t, e, "T", 0, 4, 5*time.Second) {
		bodies = append(bodies, string(m.Body))
	}
	if !slices.Equal(bodies, []string{"0", "2", "4", "6"}) {
		t.Fatalf("delivered %v", bodies)
	}
	d, _ := strconv.ParseInt(due, 10, 64)
	for _, g := range gone {
		if pending, _ := e.timers.Has(timer.Entry{Due: d, Offset: g.CommitLogOffset}); pending {
			t.Fatalf("the entry of a message of a deleted topic is still pending")
		}
	}
}

// A message a client sends with the engine's retiring properties (a
// delivered timer message or committed transaction sent again as it was
// received) is stored without them: it schedules again, and retires
// nothing.
func TestSendDropsRetiringProperties(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	due := strconv.FormatInt(time.Now().Add(50*time.Millisecond).UnixMilli(), 10)
	if _, err := e.Send(ctx, newMsg("T", "first", message.PropertyTimerDeliverMS, due)); err != nil {
		t.Fatal(err)
	}
	got := waitMessages(t, e, "T", 0, 1, 5*time.Second)
	half, err := e.Send(ctx, &message.Message{Topic: "T", Body: []byte("half"), Properties: map[string]string{
		message.PropertyTransactionPrepared: "true", message.PropertyProducerGroup: "PG"}})
	if err != nil {
		t.Fatal(err)
	}

	again := got[0]
	again.Body = []byte("again")
	again.Properties[message.PropertyTimerDeliverMS] = strconv.FormatInt(time.Now().Add(50*time.Millisecond).UnixMilli(), 10)
	again.Properties[propertyTransactionSource] = strconv.FormatInt(half.CommitLogOffset, 10) // a forged decision
	props := maps.Clone(again.Properties)
	if _, err := e.Send(ctx, again); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(again.Properties, props) {
		t.Fatalf("Send changed the message's properties: %v", again.Properties)
	}
	if err := e.EndTransaction(ctx, EndTransactionRequest{ProducerGroup: "PG", CommitLogOffset: half.CommitLogOffset, QueueOffset: -1, Decision: Commit}); err != nil {
		t.Fatalf("the half message was retired by a client's message: %v", err)
	}
	var bodies []string
	for _, m := range waitMessages(t, e, "T", 0, 3, 5*time.Second) {
		bodies = append(bodies, string(m.Body))
	}
	slices.Sort(bodies)
	if !slices.Equal(bodies, []string{"again", "first", "half"}) {
		t.Fatalf("delivered %v", bodies)
	}
}
