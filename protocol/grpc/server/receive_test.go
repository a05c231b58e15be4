package server

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/protobuf/types/known/durationpb"
)

func TestReceiveAck(t *testing.T) {
	h := newConsumeHarness(t, Options{})
	h.topic("T", 4)
	for i := range 10 {
		h.send("T", fmt.Sprint("m", i), message.PropertyTags, "A", message.PropertyKeys, "k1 k2", "color", "red")
	}
	ctx := clientCtx("c1")
	msgs := h.mustReceive(ctx, receiveReq("G", "T", 32, 30*time.Second), rmqpb.Code_OK)
	if len(msgs) != 10 {
		t.Fatalf("received %d messages, want 10", len(msgs))
	}
	for _, m := range msgs {
		sp := m.GetSystemProperties()
		sum := md5.Sum(m.GetBody())
		switch {
		case m.GetTopic().GetName() != "T":
			t.Errorf("topic %q", m.GetTopic().GetName())
		case sp.GetReceiptHandle() == "" || sp.GetMessageId() == "":
			t.Errorf("no handle or id: %v", sp)
		case sp.GetDeliveryAttempt() != 1:
			t.Errorf("attempt %d", sp.GetDeliveryAttempt())
		case sp.GetBodyDigest().GetChecksum() != strings.ToUpper(hex.EncodeToString(sum[:])):
			t.Errorf("digest %v", sp.GetBodyDigest())
		case sp.GetTag() != "A" || !slices.Equal(sp.GetKeys(), []string{"k1", "k2"}) || m.GetUserProperties()["color"] != "red":
			t.Errorf("properties: tag %q keys %q user %v", sp.GetTag(), sp.GetKeys(), m.GetUserProperties())
		case sp.GetInvisibleDuration().AsDuration() != 30*time.Second:
			t.Errorf("invisible %v", sp.GetInvisibleDuration())
		}
	}
	h.mustReceive(ctx, receiveReq("G", "T", 32, 30*time.Second), rmqpb.Code_MESSAGE_NOT_FOUND)

	resp := h.ack(ctx, "G", "T", msgs...)
	if resp.GetStatus().GetCode() != rmqpb.Code_OK || len(resp.GetEntries()) != 10 {
		t.Fatalf("ack: %v", resp)
	}
	for i, e := range resp.GetEntries() {
		if e.GetStatus().GetCode() != rmqpb.Code_OK || e.GetMessageId() != msgs[i].GetSystemProperties().GetMessageId() {
			t.Errorf("entry %d: %v", i, e)
		}
	}
	// Acknowledging again is a success, not a retry loop for clients.
	if resp := h.ack(ctx, "G", "T", msgs[3]); resp.GetStatus().GetCode() != rmqpb.Code_OK {
		t.Errorf("second ack: %v", resp.GetStatus())
	}
	if code := h.ackHandle(ctx, "G", "T", "garbage"); code != rmqpb.Code_INVALID_RECEIPT_HANDLE {
		t.Errorf("ack of garbage: %v", code)
	}
	// A handle of another group is not valid for this one.
	if code := h.ackHandle(ctx, "G2", "T", msgs[0].GetSystemProperties().GetReceiptHandle()); code != rmqpb.Code_INVALID_RECEIPT_HANDLE {
		t.Errorf("ack in another group: %v", code)
	}
}

func TestAckMixedResults(t *testing.T) {
	h := newConsumeHarness(t, Options{})
	h.topic("T", 1)
	h.send("T", "a")
	ctx := clientCtx("c1")
	msgs := h.mustReceive(ctx, receiveReq("G", "T", 1, 30*time.Second), rmqpb.Code_OK)
	resp, err := h.client.AckMessage(ctx, &rmqpb.AckMessageRequest{
		Group: &rmqpb.Resource{Name: "G"}, Topic: &rmqpb.Resource{Name: "T"},
		Entries: []*rmqpb.AckMessageEntry{
			{ReceiptHandle: msgs[0].GetSystemProperties().GetReceiptHandle()},
			{ReceiptHandle: "1 T 0 0 1 2 00"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetStatus().GetCode() != rmqpb.Code_MULTIPLE_RESULTS ||
		resp.GetEntries()[0].GetStatus().GetCode() != rmqpb.Code_OK ||
		resp.GetEntries()[1].GetStatus().GetCode() != rmqpb.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("ack: %v", resp)
	}
}

// One AckMessage may mix handles of renewed leases and plain ones, of
// several queues, repeated, empty or garbage: each entry gets what it
// would alone, in order.
func TestAckManyKinds(t *testing.T) {
	h := newConsumeHarness(t, Options{Consume: ConsumeOptions{
		MinInvisible:       20 * time.Millisecond,
		AutoRenewInvisible: 200 * time.Millisecond,
		RenewBefore:        100 * time.Millisecond,
		RenewInterval:      10 * time.Millisecond,
	}})
	h.topic("T", 3)
	for i := range 9 {
		h.send("T", fmt.Sprint("m", i))
	}
	ctx := clientCtx("c1")
	plain := h.mustReceive(ctx, receiveReq("G", "T", 6, 30*time.Second), rmqpb.Code_OK)
	renewed := receiveReq("G", "T", 3, 0)
	renewed.InvisibleDuration, renewed.AutoRenew = nil, true
	leased := h.mustReceive(ctx, renewed, rmqpb.Code_OK)
	if len(plain) != 6 || len(leased) != 3 {
		t.Fatalf("received %d and %d", len(plain), len(leased))
	}
	time.Sleep(300 * time.Millisecond) // the leases were renewed: their handles replaced
	handle := func(m *rmqpb.Message) string { return m.GetSystemProperties().GetReceiptHandle() }
	entries := []string{
		handle(plain[0]), handle(leased[0]), handle(plain[1]), "", handle(leased[1]),
		handle(plain[0]), "garbage", handle(plain[2]), handle(plain[3]), handle(plain[4]), handle(plain[5]), handle(leased[2]),
	}
	want := []rmqpb.Code{
		rmqpb.Code_OK, rmqpb.Code_OK, rmqpb.Code_OK, rmqpb.Code_INVALID_RECEIPT_HANDLE, rmqpb.Code_OK,
		rmqpb.Code_OK, rmqpb.Code_INVALID_RECEIPT_HANDLE, rmqpb.Code_OK, rmqpb.Code_OK, rmqpb.Code_OK, rmqpb.Code_OK, rmqpb.Code_OK,
	}
	req := &rmqpb.AckMessageRequest{Group: &rmqpb.Resource{Name: "G"}, Topic: &rmqpb.Resource{Name: "T"}}
	for i, e := range entries {
		req.Entries = append(req.Entries, &rmqpb.AckMessageEntry{ReceiptHandle: e, MessageId: fmt.Sprint("id", i)})
	}
	resp, err := h.client.AckMessage(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetStatus().GetCode() != rmqpb.Code_MULTIPLE_RESULTS || len(resp.GetEntries()) != len(entries) {
		t.Fatalf("ack: %v", resp.GetStatus())
	}
	for i, e := range resp.GetEntries() {
		if e.GetStatus().GetCode() != want[i] || e.GetMessageId() != fmt.Sprint("id", i) || e.GetReceiptHandle() != entries[i] {
			t.Errorf("entry %d: %v", i, e)
		}
	}
	if n := h.srv.leases.len(); n != 0 {
		t.Errorf("%d leases left", n)
	}
	// Nothing comes back: every message was acknowledged.
	wait := receiveReq("G", "T", 32, 20*time.Millisecond)
	wait.LongPollingTimeout = durationpb.New(500 * time.Millisecond)
	h.mustReceive(clientCtx("other"), wait, rmqpb.Code_MESSAGE_NOT_FOUND)
}

func TestChangeInvisibleRedelivers(t *testing.T) {
	h := newConsumeHarness(t, Options{Consume: ConsumeOptions{MinChangeInvisible: 20 * time.Millisecond}})
	h.topic("T", 2)
	h.send("T", "once")
	ctx := clientCtx("c1")
	first := h.mustReceive(ctx, receiveReq("G", "T", 8, 30*time.Second), rmqpb.Code_OK)
	old := first[0].GetSystemProperties().GetReceiptHandle()

	// Node push consumers nack with a few milliseconds: accepted, raised
	// to the minimum.
	resp := h.changeInvisible(ctx, "G", "T", old, time.Millisecond)
	if resp.GetStatus().GetCode() != rmqpb.Code_OK || resp.GetReceiptHandle() == "" || resp.GetReceiptHandle() == old {
		t.Fatalf("change invisible: %v", resp)
	}
	if code := h.ackHandle(ctx, "G", "T", old); code != rmqpb.Code_INVALID_RECEIPT_HANDLE {
		t.Errorf("ack with the replaced handle: %v", code)
	}
	req := receiveReq("G", "T", 8, 30*time.Second)
	req.LongPollingTimeout = durationpb.New(5 * time.Second)
	again := h.mustReceive(ctx, req, rmqpb.Code_OK)
	if len(again) != 1 || string(again[0].GetBody()) != "once" || again[0].GetSystemProperties().GetDeliveryAttempt() != 2 {
		t.Fatalf("redelivery: %v", again)
	}
	if again[0].GetSystemProperties().GetMessageId() != first[0].GetSystemProperties().GetMessageId() {
		t.Errorf("redelivered with another message id")
	}
	if code := h.ackHandle(ctx, "G", "T", resp.GetReceiptHandle()); code != rmqpb.Code_INVALID_RECEIPT_HANDLE {
		t.Errorf("ack with the handle the redelivery replaced: %v", code)
	}
	if resp := h.ack(ctx, "G", "T", again...); resp.GetStatus().GetCode() != rmqpb.Code_OK {
		t.Fatalf("ack: %v", resp.GetStatus())
	}
	// A lease change of an acknowledged message: the client gives up.
	if resp := h.changeInvisible(ctx, "G", "T", again[0].GetSystemProperties().GetReceiptHandle(), time.Second); resp.GetStatus().GetCode() != rmqpb.Code_INVALID_RECEIPT_HANDLE {
		t.Errorf("change invisible after ack: %v", resp.GetStatus())
	}
}

func TestInvisibleExpiryRedelivers(t *testing.T) {
	h := newConsumeHarness(t, Options{Consume: ConsumeOptions{MinInvisible: 50 * time.Millisecond}})
	h.topic("T", 1)
	h.send("T", "x")
	ctx := clientCtx("c1")
	h.mustReceive(ctx, receiveReq("G", "T", 1, 100*time.Millisecond), rmqpb.Code_OK)
	req := receiveReq("G", "T", 1, time.Minute)
	req.LongPollingTimeout = durationpb.New(5 * time.Second)
	start := time.Now()
	msgs := h.mustReceive(ctx, req, rmqpb.Code_OK)
	if msgs[0].GetSystemProperties().GetDeliveryAttempt() != 2 {
		t.Errorf("attempt %d", msgs[0].GetSystemProperties().GetDeliveryAttempt())
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("redelivery after the lease took %s", d)
	}
}

func TestMaxAttemptsDeadLetter(t *testing.T) {
	h := newConsumeHarness(t, Options{Consume: ConsumeOptions{MinChangeInvisible: 10 * time.Millisecond}})
	h.topic("T", 1)
	h.group(meta.Group{Name: "G", MaxAttempts: 2})
	h.send("T", "poison", message.PropertyUniqKey, "ID-POISON")
	ctx := clientCtx("c1")
	wait := receiveReq("G", "T", 1, 30*time.Second)
	wait.LongPollingTimeout = durationpb.New(2 * time.Second)
	for attempt := int32(1); attempt <= 2; attempt++ {
		msgs := h.mustReceive(ctx, wait, rmqpb.Code_OK)
		if got := msgs[0].GetSystemProperties().GetDeliveryAttempt(); got != attempt {
			t.Fatalf("attempt %d, want %d", got, attempt)
		}
		h.changeInvisible(ctx, "G", "T", msgs[0].GetSystemProperties().GetReceiptHandle(), 0)
	}
	wait.LongPollingTimeout = durationpb.New(300 * time.Millisecond)
	h.mustReceive(ctx, wait, rmqpb.Code_MESSAGE_NOT_FOUND)

	dl := h.pullAll(ctx, "G", message.DLQTopic("G"), 0)
	if len(dl) != 1 {
		t.Fatalf("dead-letter topic holds %d messages", len(dl))
	}
	sp := dl[0].GetSystemProperties()
	if sp.GetMessageId() != "ID-POISON" || sp.GetDeadLetterQueue().GetTopic() != "T" || sp.GetDeadLetterQueue().GetMessageId() != "ID-POISON" {
		t.Errorf("dead letter: id %q, dead_letter_queue %v", sp.GetMessageId(), sp.GetDeadLetterQueue())
	}
}

// The max attempts of a client's declared retry policy win over the
// group's.
func TestMaxAttemptsFromSettings(t *testing.T) {
	h := newConsumeHarness(t, Options{Consume: ConsumeOptions{MinChangeInvisible: 10 * time.Millisecond}})
	h.topic("T", 1)
	h.send("T", "poison")
	h.srv.sessions.Touch("c1", "").SetSettings(&rmqpb.Settings{BackoffPolicy: &rmqpb.RetryPolicy{MaxAttempts: 1}})
	ctx := clientCtx("c1")
	msgs := h.mustReceive(ctx, receiveReq("G", "T", 1, 30*time.Second), rmqpb.Code_OK)
	h.changeInvisible(ctx, "G", "T", msgs[0].GetSystemProperties().GetReceiptHandle(), 0)
	wait := receiveReq("G", "T", 1, 30*time.Second)
	wait.LongPollingTimeout = durationpb.New(300 * time.Millisecond)
	h.mustReceive(ctx, wait, rmqpb.Code_MESSAGE_NOT_FOUND)
	if dl := h.pullAll(ctx, "G", message.DLQTopic("G"), 0); len(dl) != 1 {
		t.Fatalf("dead-letter topic holds %d messages", len(dl))
	}
}

// A client that declared its language gets the CRC32 of each body in the
// form its language computes; one that declared none gets MD5. Pulls
// carry the same digest as receives.
func TestDigestByLanguage(t *testing.T) {
	h := newConsumeHarness(t, Options{})
	h.topic("T", 1)
	h.send("T", "123456789") // CRC32 0xCBF43926
	h.send("T", "body-144")  // CRC32 0x00DA7457
	md5Of := func(b []byte) string { sum := md5.Sum(b); return strings.ToUpper(hex.EncodeToString(sum[:])) }
	cases := []struct {
		lang rmqpb.Language
		typ  rmqpb.DigestType
		want map[string]string
	}{
		{rmqpb.Language_NODE_JS, rmqpb.DigestType_CRC32, map[string]string{"123456789": "3421780262", "body-144": "14316631"}},
		{rmqpb.Language_JAVA, rmqpb.DigestType_CRC32, map[string]string{"123456789": "CBF43926", "body-144": "DA7457"}},
		{rmqpb.Language_GOLANG, rmqpb.DigestType_CRC32, map[string]string{"123456789": "CBF43926", "body-144": "DA7457"}},
		{rmqpb.Language_PYTHON, rmqpb.DigestType_CRC32, map[string]string{"123456789": "CBF43926", "body-144": "00DA7457"}},
		{rmqpb.Language_RUST, rmqpb.DigestType_MD5, map[string]string{"123456789": md5Of([]byte("123456789")), "body-144": md5Of([]byte("body-144"))}},
		{rmqpb.Language_LANGUAGE_UNSPECIFIED, rmqpb.DigestType_MD5, map[string]string{"123456789": md5Of([]byte("123456789")), "body-144": md5Of([]byte("body-144"))}},
	}
	for i, c := range cases {
		id := fmt.Sprint("c", i)
		if c.lang != rmqpb.Language_LANGUAGE_UNSPECIFIED {
			h.srv.sessions.Touch(id, "").SetSettings(&rmqpb.Settings{UserAgent: &rmqpb.UA{Language: c.lang}})
		}
		ctx := clientCtx(id)
		received := h.mustReceive(ctx, receiveReq(fmt.Sprint("G", i), "T", 32, 30*time.Second), rmqpb.Code_OK)
		pulled := h.pullAll(ctx, fmt.Sprint("P", i), "T", 0)
		if len(received) != 2 || len(pulled) != 2 {
			t.Fatalf("%s: received %d, pulled %d messages", c.lang, len(received), len(pulled))
		}
		for _, m := range append(received, pulled...) {
			d := m.GetSystemProperties().GetBodyDigest()
			if d.GetType() != c.typ || d.GetChecksum() != c.want[string(m.GetBody())] {
				t.Errorf("%s: body %q: digest %v, want %s %s", c.lang, m.GetBody(), d, c.typ, c.want[string(m.GetBody())])
			}
		}
	}
}

func TestForwardToDeadLetter(t *testing.T) {
	h := newConsumeHarness(t, Options{})
	h.topic("T", 1)
	h.send("T", "fwd", message.PropertyUniqKey, "ID-FWD")
	ctx := clientCtx("c1")
	msgs := h.mustReceive(ctx, receiveReq("G", "T", 1, 30*time.Second), rmqpb.Code_OK)
	req := &rmqpb.ForwardMessageToDeadLetterQueueRequest{
		Group: &rmqpb.Resource{Name: "G"}, Topic: &rmqpb.Resource{Name: "T"},
		ReceiptHandle: msgs[0].GetSystemProperties().GetReceiptHandle(), MessageId: "ID-FWD",
		DeliveryAttempt: 1, MaxDeliveryAttempts: 1,
	}
	for i := range 2 { // idempotent
		resp, err := h.client.ForwardMessageToDeadLetterQueue(ctx, req)
		if err != nil || resp.GetStatus().GetCode() != rmqpb.Code_OK {
			t.Fatalf("forward %d: %v, %v", i, resp, err)
		}
	}
	if resp := h.ack(ctx, "G", "T", msgs...); resp.GetStatus().GetCode() != rmqpb.Code_OK {
		t.Errorf("ack after forward: %v", resp.GetStatus())
	}
	h.mustReceive(ctx, receiveReq("G", "T", 1, 30*time.Second), rmqpb.Code_MESSAGE_NOT_FOUND)
	dl := h.pullAll(ctx, "G", message.DLQTopic("G"), 0)
	if len(dl) != 1 || dl[0].GetSystemProperties().GetDeadLetterQueue().GetMessageId() != "ID-FWD" {
		t.Fatalf("dead letters: %v", dl)
	}
	req.ReceiptHandle = "garbage"
	if resp, _ := h.client.ForwardMessageToDeadLetterQueue(ctx, req); resp.GetStatus().GetCode() != rmqpb.Code_INVALID_RECEIPT_HANDLE {
		t.Errorf("forward of garbage: %v", resp.GetStatus())
	}

	// A handle replaced since is answered OK (clients retry anything
	// else forever) but forwards nothing: the message is in flight.
	h.send("T", "stale")
	msgs = h.mustReceive(ctx, receiveReq("G", "T", 1, 30*time.Second), rmqpb.Code_OK)
	old := msgs[0].GetSystemProperties().GetReceiptHandle()
	cur := h.changeInvisible(ctx, "G", "T", old, time.Minute).GetReceiptHandle()
	req.ReceiptHandle = old
	if resp, _ := h.client.ForwardMessageToDeadLetterQueue(ctx, req); resp.GetStatus().GetCode() != rmqpb.Code_OK {
		t.Errorf("forward with a replaced handle: %v", resp.GetStatus())
	}
	if dl := h.pullAll(ctx, "G", message.DLQTopic("G"), 0); len(dl) != 1 {
		t.Errorf("a replaced handle forwarded its message: %d dead letters", len(dl))
	}
	if code := h.ackHandle(ctx, "G", "T", cur); code != rmqpb.Code_OK {
		t.Errorf("ack with the current handle: %v", code)
	}
}

func TestFIFOOrderAndBlocking(t *testing.T) {
	h := newConsumeHarness(t, Options{Consume: ConsumeOptions{MinInvisible: 50 * time.Millisecond}})
	h.topic("T", 1)
	h.group(meta.Group{Name: "G", FIFO: true})
	for i := range 3 {
		h.send("T", fmt.Sprint("a", i), message.PropertyShardingKey, "ga")
		h.send("T", fmt.Sprint("b", i), message.PropertyShardingKey, "gb")
	}
	ctx := clientCtx("c1")
	req := receiveReq("G", "T", 16, 30*time.Second)
	req.AttemptId = strPtr("attempt-1")
	first := h.mustReceive(ctx, req, rmqpb.Code_OK)
	if got := bodiesOf(first); !slices.Equal(got, []string{"a0", "b0"}) {
		t.Fatalf("first receive %v, want the head of each message group", got)
	}
	if first[0].GetSystemProperties().GetMessageType() != rmqpb.MessageType_FIFO || first[0].GetSystemProperties().GetMessageGroup() != "ga" {
		t.Errorf("FIFO fields: %v", first[0].GetSystemProperties())
	}
	// Both groups are blocked while their heads are in flight...
	req.AttemptId = strPtr("attempt-2")
	h.mustReceive(ctx, req, rmqpb.Code_MESSAGE_NOT_FOUND)
	// ...but a client retrying the attempt that got them gets them again.
	req.AttemptId = strPtr("attempt-1")
	again := h.mustReceive(ctx, req, rmqpb.Code_OK)
	if got := bodiesOf(again); !slices.Equal(got, []string{"a0", "b0"}) {
		t.Fatalf("retried attempt got %v", got)
	}
	// Acking a0 releases a1; b stays blocked.
	for _, m := range again {
		if string(m.GetBody()) == "a0" {
			if resp := h.ack(ctx, "G", "T", m); resp.GetStatus().GetCode() != rmqpb.Code_OK {
				t.Fatal(resp.GetStatus())
			}
		}
	}
	req.AttemptId = strPtr("attempt-3")
	if got := bodiesOf(h.mustReceive(ctx, req, rmqpb.Code_OK)); !slices.Equal(got, []string{"a1"}) {
		t.Fatalf("after acking a0 got %v, want a1", got)
	}
	// A head whose lease ends comes back, same message, next attempt.
	short := receiveReq("G", "T", 16, 60*time.Millisecond)
	short.AttemptId = strPtr("attempt-4")
	h.mustReceive(ctx, short, rmqpb.Code_MESSAGE_NOT_FOUND) // all blocked
	for _, m := range again {
		if string(m.GetBody()) == "b0" {
			h.changeInvisible(ctx, "G", "T", m.GetSystemProperties().GetReceiptHandle(), 0)
		}
	}
	wait := receiveReq("G", "T", 16, 30*time.Second)
	wait.LongPollingTimeout = durationpb.New(3 * time.Second)
	wait.AttemptId = strPtr("attempt-5")
	got := h.mustReceive(ctx, wait, rmqpb.Code_OK)
	if len(got) != 1 || string(got[0].GetBody()) != "b0" || got[0].GetSystemProperties().GetDeliveryAttempt() < 2 {
		t.Fatalf("redelivery of b0: %v", bodiesOf(got))
	}
}

func strPtr(s string) *string { return &s }

func TestReceiveFilters(t *testing.T) {
	h := newConsumeHarness(t, Options{})
	h.topic("T", 2)
	for i := range 10 {
		h.send("T", fmt.Sprint(i), message.PropertyTags, string(rune('A'+i%3)), "n", fmt.Sprint(i))
	}
	ctx := clientCtx("c1")
	tags := receiveReq("GT", "T", 32, 30*time.Second)
	tags.FilterExpression = &rmqpb.FilterExpression{Type: rmqpb.FilterType_TAG, Expression: "A||C"}
	got := bodiesOf(h.mustReceive(ctx, tags, rmqpb.Code_OK))
	slices.Sort(got)
	if want := []string{"0", "2", "3", "5", "6", "8", "9"}; !slices.Equal(got, want) {
		t.Errorf("tag filter got %v, want %v", got, want)
	}
	sql := receiveReq("GS", "T", 32, 30*time.Second)
	sql.FilterExpression = &rmqpb.FilterExpression{Type: rmqpb.FilterType_SQL, Expression: "n > 6"}
	got = bodiesOf(h.mustReceive(ctx, sql, rmqpb.Code_OK))
	slices.Sort(got)
	if want := []string{"7", "8", "9"}; !slices.Equal(got, want) {
		t.Errorf("SQL filter got %v, want %v", got, want)
	}
	for _, fe := range []*rmqpb.FilterExpression{
		{Type: rmqpb.FilterType_SQL, Expression: "n >"},
		{Type: rmqpb.FilterType_SQL},
		{Type: rmqpb.FilterType(7), Expression: "*"},
	} {
		bad := receiveReq("GB", "T", 32, 30*time.Second)
		bad.FilterExpression = fe
		h.mustReceive(ctx, bad, rmqpb.Code_ILLEGAL_FILTER_EXPRESSION)
	}
}

func TestAutoRenew(t *testing.T) {
	h := newConsumeHarness(t, Options{Consume: ConsumeOptions{
		MinInvisible:       20 * time.Millisecond,
		AutoRenewInvisible: 200 * time.Millisecond,
		RenewBefore:        100 * time.Millisecond,
		RenewInterval:      10 * time.Millisecond,
	}})
	h.topic("T", 1)
	h.send("T", "kept")
	h.send("T", "nacked")
	ctx := clientCtx("push")
	req := receiveReq("G", "T", 2, 0)
	req.InvisibleDuration, req.AutoRenew = nil, true
	msgs := h.mustReceive(ctx, req, rmqpb.Code_OK)
	if len(msgs) != 2 {
		t.Fatalf("received %d", len(msgs))
	}
	if d := msgs[0].GetSystemProperties().GetInvisibleDuration().AsDuration(); d != 200*time.Millisecond {
		t.Errorf("invisible duration %s, want the auto-renew lease", d)
	}

	// Five leases later nobody else has seen them.
	other := clientCtx("other")
	peek := receiveReq("G", "T", 2, 20*time.Millisecond)
	for range 10 {
		time.Sleep(100 * time.Millisecond)
		h.mustReceive(other, peek, rmqpb.Code_MESSAGE_NOT_FOUND)
	}
	// The first handles still work: a nack of one brings it back with the
	// next attempt, an ack of the other retires it.
	nacked, kept := msgs[1], msgs[0]
	if resp := h.changeInvisible(ctx, "G", "T", nacked.GetSystemProperties().GetReceiptHandle(), 0); resp.GetStatus().GetCode() != rmqpb.Code_OK {
		t.Fatalf("nack with the first handle: %v", resp.GetStatus())
	}
	if resp := h.ack(ctx, "G", "T", kept); resp.GetStatus().GetCode() != rmqpb.Code_OK {
		t.Fatalf("ack with the first handle: %v", resp.GetStatus())
	}
	wait := receiveReq("G", "T", 2, time.Minute)
	wait.LongPollingTimeout = durationpb.New(3 * time.Second)
	back := h.mustReceive(other, wait, rmqpb.Code_OK)
	if len(back) != 1 || string(back[0].GetBody()) != string(nacked.GetBody()) || back[0].GetSystemProperties().GetDeliveryAttempt() != 2 {
		t.Fatalf("after nack: %v", bodiesOf(back))
	}
	if n := h.srv.leases.len(); n != 0 {
		t.Errorf("%d leases left", n)
	}
}

// Renewal stops when the client's session is dropped, and after MaxRenew.
func TestAutoRenewEnds(t *testing.T) {
	for _, tc := range []string{"session dropped", "max renew"} {
		t.Run(tc, func(t *testing.T) {
			o := ConsumeOptions{
				MinInvisible:       20 * time.Millisecond,
				AutoRenewInvisible: 200 * time.Millisecond,
				RenewBefore:        100 * time.Millisecond,
				RenewInterval:      10 * time.Millisecond,
			}
			if tc == "max renew" {
				o.MaxRenew = 500 * time.Millisecond
			}
			h := newConsumeHarness(t, Options{Consume: o})
			h.topic("T", 1)
			h.send("T", "m")
			req := receiveReq("G", "T", 1, 0)
			req.InvisibleDuration, req.AutoRenew = nil, true
			start := time.Now()
			h.mustReceive(clientCtx("push"), req, rmqpb.Code_OK)
			if tc == "session dropped" {
				time.Sleep(300 * time.Millisecond)
				h.srv.sessions.Terminate("push")
			}
			wait := receiveReq("G", "T", 1, time.Minute)
			wait.LongPollingTimeout = durationpb.New(5 * time.Second)
			back := h.mustReceive(clientCtx("other"), wait, rmqpb.Code_OK)
			if back[0].GetSystemProperties().GetDeliveryAttempt() != 2 {
				t.Errorf("attempt %d", back[0].GetSystemProperties().GetDeliveryAttempt())
			}
			if d := time.Since(start); d < 300*time.Millisecond || d > 3*time.Second {
				t.Errorf("came back after %s", d)
			}
			for range 100 {
				if h.srv.leases.len() == 0 {
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Errorf("%d leases left", h.srv.leases.len())
		})
	}
}

func TestLongPolling(t *testing.T) {
	h := newConsumeHarness(t, Options{})
	h.topic("T", 4)
	ctx := clientCtx("c1")
	req := receiveReq("G", "T", 4, 30*time.Second)
	req.LongPollingTimeout = durationpb.New(10 * time.Second)
	go func() {
		time.Sleep(200 * time.Millisecond)
		h.send("T", "late")
	}()
	start := time.Now()
	msgs := h.mustReceive(ctx, req, rmqpb.Code_OK)
	if string(msgs[0].GetBody()) != "late" {
		t.Fatalf("got %v", bodiesOf(msgs))
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 3*time.Second {
		t.Errorf("woke after %s", d)
	}

	// Long polling ends before the call's deadline, with an answer.
	dctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	start = time.Now()
	st, _ := h.receive(dctx, req)
	if st.GetCode() != rmqpb.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("status %v", st)
	}
	if d := time.Since(start); d < 500*time.Millisecond || d > 1500*time.Millisecond {
		t.Errorf("answered after %s", d)
	}
}

func TestReceiveInflatesBodies(t *testing.T) {
	h := newConsumeHarness(t, Options{})
	h.topic("T", 1)
	body := bytes.Repeat([]byte("zlib body "), 1000)
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write(body)
	w.Close()
	m := &message.Message{Topic: "T", Body: z.Bytes(), SysFlag: message.SysFlagCompressed}
	if _, err := h.eng.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	h.eng.WaitDispatched(context.Background())
	msgs := h.mustReceive(clientCtx("c"), receiveReq("G", "T", 1, 30*time.Second), rmqpb.Code_OK)
	if !bytes.Equal(msgs[0].GetBody(), body) || msgs[0].GetSystemProperties().GetBodyEncoding() != rmqpb.Encoding_IDENTITY {
		t.Fatalf("body of %d bytes, encoding %v", len(msgs[0].GetBody()), msgs[0].GetSystemProperties().GetBodyEncoding())
	}
}

func TestQueryAssignment(t *testing.T) {
	h := newConsumeHarness(t, Options{BrokerName: "b1"})
	h.topic("T", 3)
	h.group(meta.Group{Name: "F", FIFO: true})
	ctx := clientCtx("c1")
	query := func(group, topic string) *rmqpb.QueryAssignmentResponse {
		resp, err := h.client.QueryAssignment(ctx, &rmqpb.QueryAssignmentRequest{
			Topic: &rmqpb.Resource{Name: topic}, Group: &rmqpb.Resource{Name: group},
			Endpoints: &rmqpb.Endpoints{Scheme: rmqpb.AddressScheme_DOMAIN_NAME, Addresses: []*rmqpb.Address{{Host: "access", Port: 8081}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := query("G", "T")
	if resp.GetStatus().GetCode() != rmqpb.Code_OK || len(resp.GetAssignments()) != 1 {
		t.Fatalf("standard group: %v", resp)
	}
	mq := resp.GetAssignments()[0].GetMessageQueue()
	addr := mq.GetBroker().GetEndpoints().GetAddresses()
	if mq.GetId() != -1 || mq.GetPermission() != rmqpb.Permission_READ_WRITE || mq.GetBroker().GetName() != "b1" ||
		len(addr) != 1 || fmt.Sprintf("%s:%d", addr[0].GetHost(), addr[0].GetPort()) != h.srv.opts.Endpoint ||
		len(mq.GetAcceptMessageTypes()) == 0 || mq.GetTopic().GetName() != "T" {
		t.Errorf("standard assignment: %v", mq)
	}
	resp = query("F", "T")
	if resp.GetStatus().GetCode() != rmqpb.Code_OK || len(resp.GetAssignments()) != 3 {
		t.Fatalf("FIFO group: %v", resp)
	}
	for i, a := range resp.GetAssignments() {
		if a.GetMessageQueue().GetId() != int32(i) {
			t.Errorf("FIFO assignment %d: %v", i, a)
		}
	}
	if code := query("G", "Nope").GetStatus().GetCode(); code != rmqpb.Code_TOPIC_NOT_FOUND {
		t.Errorf("unknown topic: %v", code)
	}
	if code := query("", "T").GetStatus().GetCode(); code != rmqpb.Code_ILLEGAL_CONSUMER_GROUP {
		t.Errorf("no group: %v", code)
	}
	if err := h.eng.UpdateTopic(meta.Topic{Name: "T", ReadQueues: 3, WriteQueues: 3, Perm: meta.PermWrite}); err != nil {
		t.Fatal(err)
	}
	if code := query("G", "T").GetStatus().GetCode(); code != rmqpb.Code_FORBIDDEN {
		t.Errorf("write-only topic: %v", code)
	}
}

// The engine's delivery history names the gRPC consumer that received a
// message, and its acknowledgement.
func TestReceiveRecordsTheConsumer(t *testing.T) {
	h := newConsumeHarness(t, Options{})
	h.topic("T", 1)
	h.send("T", "m")
	ctx := clientCtx("c1")
	msgs := h.mustReceive(ctx, receiveReq("G", "T", 32, 30*time.Second), rmqpb.Code_OK)
	if resp := h.ack(ctx, "G", "T", msgs...); resp.GetStatus().GetCode() != rmqpb.Code_OK {
		t.Fatalf("ack: %v", resp)
	}
	m, err := h.eng.MessageByID(msgs[0].GetSystemProperties().GetMessageId())
	if err != nil {
		t.Fatal(err)
	}
	got := h.eng.Deliveries("G", m)
	if len(got) != 2 || got[0].Kind != engine.DeliveryPop || got[0].Protocol != "grpc" || got[0].Client != "c1" || !got[0].Addr.IsValid() || got[1].Kind != engine.DeliveryAck {
		t.Fatalf("history: %+v", got)
	}
}
