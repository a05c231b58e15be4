package engine

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
)

// TestDispatchLag: the lag counts the bytes stored and not yet indexed,
// and is zero once the dispatcher has caught up.
func TestDispatchLag(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	for range 10 {
		if _, err := e.Send(ctx, newMsg("T", "body")); err != nil {
			t.Fatal(err)
		}
	}
	if lag := e.DispatchLag(); lag < 0 || lag > e.Stats().LogEndOffset {
		t.Fatalf("lag %d outside [0, log end]", lag)
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	st := e.Stats()
	if lag := e.DispatchLag(); lag != 0 || st.LogEndOffset == 0 {
		t.Fatalf("after WaitDispatched: lag %d, log end %d; want 0 and more than 0", lag, st.LogEndOffset)
	}
}

// TestStatsPerGroup: pulls count under their context's group, pops under
// theirs, and popped messages are in flight until acknowledged.
func TestStatsPerGroup(t *testing.T) {
	e := openTest(t, t.TempDir(), &Options{AutoCreateGroups: true})
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	for range 5 {
		if _, err := e.Send(ctx, newMsg("T", "body")); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	pullAs := func(group string, n int) {
		t.Helper()
		c := ctx
		if group != "" {
			c = hook.NewContext(ctx, &hook.Client{Group: group})
		}
		res, err := e.Pull(c, "T", 0, 0, n, nil)
		if err != nil || len(res.Records) != n {
			t.Fatalf("pull as %q: %v", group, err)
		}
	}
	pullAs("pullers", 3)
	pullAs("", 2)
	popped, err := e.Pop(ctx, PopOptions{Group: "poppers", Topic: "T", Max: 4})
	if err != nil || len(popped) != 4 {
		t.Fatalf("pop: %d, %v", len(popped), err)
	}
	if err := e.Ack(ctx, "poppers", popped[0].Handle); err != nil {
		t.Fatal(err)
	}
	var ts TopicStats
	for _, s := range e.Stats().Topics {
		if s.Topic == "T" {
			ts = s
		}
	}
	if ts.MessagesOut != 9 {
		t.Errorf("messages out %d, want 3+2 pulled and 4 popped", ts.MessagesOut)
	}
	want := []GroupStats{{Group: ""}, {Group: "poppers", Inflight: 3}, {Group: "pullers"}}
	wantOut := []int64{2, 4, 3}
	if len(ts.Groups) != len(want) {
		t.Fatalf("groups %+v", ts.Groups)
	}
	var bytes int64
	for i, g := range ts.Groups {
		if g.Group != want[i].Group || g.Inflight != want[i].Inflight || g.MessagesOut != wantOut[i] || g.BytesOut <= 0 {
			t.Errorf("group %d = %+v, want %q with %d out and %d in flight", i, g, want[i].Group, wantOut[i], want[i].Inflight)
		}
		bytes += g.BytesOut
	}
	if bytes != ts.BytesOut {
		t.Errorf("the groups' bytes out sum to %d, the topic's are %d", bytes, ts.BytesOut)
	}
}

// TestSendLatency: every send is reported with its topic and outcome.
func TestSendLatency(t *testing.T) {
	type report struct {
		topic string
		ok    bool
	}
	var got []report
	e := openTest(t, t.TempDir(), &Options{SendLatency: func(topic string, d time.Duration, err error) {
		if d <= 0 {
			t.Errorf("send to %s took %v", topic, d)
		}
		got = append(got, report{topic, err == nil})
	}})
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	if _, err := e.Send(ctx, newMsg("T", "a")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.SendBatch(ctx, []*message.Message{newMsg("T", "b"), newMsg("T", "c")}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Send(ctx, newMsg("Missing", "d")); err == nil {
		t.Fatal("send to a missing topic succeeded")
	}
	want := []report{{"T", true}, {"T", true}, {"Missing", false}}
	if !slices.Equal(got, want) {
		t.Errorf("reports %v, want %v", got, want)
	}
}
