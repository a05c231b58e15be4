package admin

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// pullAnswer is what the fake broker answers a pull of a queue from an
// offset.
type pullAnswer struct {
	code   wire.ResponseCode
	next   int64
	stored []int64 // store times of the messages answered
}

// DeadLetters reads each queue of the dead-letter topic with pulls as the
// tools group, follows the broker's next offsets through answers without
// messages, keeps the store-time range and returns the oldest first.
func TestDeadLettersByPull(t *testing.T) {
	// SEARCH_OFFSET_BY_TIMESTAMP answers 3 and GET_MAX_OFFSET 10+queue.
	answers := map[[2]int64]pullAnswer{
		{0, 3}: {code: wire.PullRetryImmediately, next: 5},
		{0, 5}: {code: wire.Success, next: 7, stored: []int64{1000, 2000}},
		{0, 7}: {code: wire.Success, next: 9, stored: []int64{9000}}, // after the end: the queue is done
		{1, 3}: {code: wire.PullOffsetMoved, next: 8},
		{1, 8}: {code: wire.Success, next: 11, stored: []int64{1500}},
	}
	var (
		mu    sync.Mutex
		pulls []wire.PullMessageRequestHeader
	)
	f := newFake(t, func(f *fake, mux *server.Mux) {
		mux.HandleFunc(wire.PullMessage, server.KindPull, func(_ context.Context, _ *server.Conn, req *wire.Command) *wire.Command {
			var h wire.PullMessageRequestHeader
			if err := req.DecodeHeader(&h); err != nil {
				return wire.NewResponse(req, wire.InvalidParameter, err.Error())
			}
			mu.Lock()
			pulls = append(pulls, h)
			mu.Unlock()
			a, ok := answers[[2]int64{int64(h.QueueID), h.QueueOffset}]
			if !ok {
				a = pullAnswer{code: wire.PullNotFound, next: h.QueueOffset}
			}
			resp := wire.NewResponse(req, a.code, "")
			resp.EncodeHeader(&wire.PullMessageResponseHeader{NextBeginOffset: a.next, MaxOffset: 10 + int64(h.QueueID)})
			for i, ts := range a.stored {
				m := &message.Message{
					Topic: "%DLQ%g", Body: []byte("x"), QueueID: h.QueueID, QueueOffset: h.QueueOffset + int64(i),
					StoreTimestamp: ts, CommitLogOffset: ts, StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"),
					Properties: map[string]string{"UNIQ_KEY": fmt.Sprint("id-", ts), "DLQ_ORIGIN_TOPIC": "T"},
				}
				rec, err := message.AppendStored(nil, m)
				if err != nil {
					t.Error(err)
				}
				resp.Body = append(resp.Body, rec...)
			}
			return resp
		})
	})
	c := f.client(t, 5*time.Second)
	ctx := context.Background()

	dls, err := c.DeadLetters(ctx, DeadLetterQuery{Group: "g", End: time.UnixMilli(5000)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range dls {
		got = append(got, d.MsgID)
		if d.OriginTopic != "T" || d.Topic != "%DLQ%g" || d.BrokerName != "broker-a" {
			t.Errorf("dead letter %+v", d)
		}
	}
	if want := []string{"id-1000", "id-1500", "id-2000"}; !slices.Equal(got, want) {
		t.Errorf("dead letters %v, want %v", got, want)
	}
	mu.Lock()
	for _, h := range pulls {
		if h.ConsumerGroup != message.GroupTools || h.SysFlag != wire.PullFlagSubscription || h.Subscription != "*" || h.Topic != "%DLQ%g" {
			t.Errorf("pull %+v: want the tools group, a subscription of everything and no commit or suspension", h)
		}
	}
	mu.Unlock()

	dls, err = c.DeadLetters(ctx, DeadLetterQuery{Group: "g", End: time.UnixMilli(5000), Max: 2})
	if err != nil || len(dls) != 2 || dls[0].MsgID != "id-1000" || dls[1].MsgID != "id-1500" {
		t.Errorf("with Max 2: %+v, %v", dls, err)
	}
	// A group that never dead-lettered anything has no dead-letter topic.
	if dls, err := c.DeadLetters(ctx, DeadLetterQuery{Group: "other"}); err != nil || len(dls) != 0 {
		t.Errorf("a group without a dead-letter topic: %+v, %v", dls, err)
	}
	// A write-only dead-letter topic says how to make it readable.
	if _, err := c.DeadLetters(ctx, DeadLetterQuery{Group: "writeonly"}); err == nil || !strings.Contains(err.Error(), "topic update %DLQ%writeonly --perm rw") {
		t.Errorf("a write-only dead-letter topic: %v", err)
	}
	for _, q := range []DeadLetterQuery{
		{Group: "bad group"},
		{Group: "g", Max: -1},
		{Group: "g", Begin: time.UnixMilli(2), End: time.UnixMilli(1)},
	} {
		if _, err := c.DeadLetters(ctx, q); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("DeadLetters(%+v): %v, want ErrInvalidArgument", q, err)
		}
	}
}
