package karmancmd

import (
	"context"
	"encoding/json"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/cmd/karman/internal/admin"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
	"github.com/karmanmq/karman/server"
	_ "github.com/karmanmq/karman/server/modules/broker"  // the broker
	_ "github.com/karmanmq/karman/server/modules/namesrv" // the name server
)

// adminJSON runs "karman admin --namesrv ns --json args..." and decodes
// its output into a T.
func adminJSON[T any](t *testing.T, ns string, args ...string) T {
	t.Helper()
	out, stderr, err := runAdmin(t, append([]string{"--namesrv", ns, "--json"}, args...)...)
	if err != nil {
		t.Fatalf("admin %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("admin %s: output is not JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
	return v
}

// adminFails runs an admin command that must fail and returns its error.
func adminFails(t *testing.T, ns string, args ...string) string {
	t.Helper()
	out, _, err := runAdmin(t, append([]string{"--namesrv", ns}, args...)...)
	if err == nil {
		t.Fatalf("admin %s succeeded:\n%s", strings.Join(args, " "), out)
	}
	return err.Error()
}

// TestAdminEndToEnd runs every admin command against an in-process
// "karman serve" with its name server and broker on loopback ports.
func TestAdminEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	r := startServe(t, server.Default, "--data", t.TempDir(), "--segment-size", "64MiB",
		"--http-addr", "127.0.0.1:0", "--namesrv-addr", "127.0.0.1:0", "--broker-addr", "127.0.0.1:0", "--log-level", "error")
	ns, brokerAddr := r.addrs["namesrv"], r.addrs["broker"]
	if ns == "" || brokerAddr == "" {
		t.Fatalf("serve announced %v", r.addrs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// cluster list
	cl := adminJSON[brokerList](t, ns, "cluster", "list")
	if len(cl.Brokers) != 1 || cl.Brokers[0].Addr != brokerAddr || !cl.Brokers[0].IsMaster() || cl.Brokers[0].Name == "" || cl.Brokers[0].Cluster == "" {
		t.Fatalf("cluster list = %+v, want the broker at %s", cl, brokerAddr)
	}
	brokerName := cl.Brokers[0].Name
	if st := cl.Brokers[0].Status; st == nil || st.Version == "" || st.DiskRatio <= 0 || st.DiskRatio > 1 || time.Since(st.Booted) > time.Hour {
		t.Errorf("cluster list status = %+v, want the broker's version, disk use and boot time", st)
	}

	// cluster wipe-write and add-write: the route of orders loses and
	// regains its write permission on this broker.
	adminJSON[admin.TopicChange](t, ns, "topic", "create", "drained", "--queues", "1")
	wiped := adminJSON[admin.WritePermChange](t, ns, "cluster", "wipe-write", brokerName)
	if wiped.Writable || len(wiped.NameServers) != 1 || wiped.NameServers[0].Topics == 0 {
		t.Errorf("cluster wipe-write = %+v", wiped)
	}
	if d := adminJSON[admin.TopicDescription](t, ns, "topic", "describe", "drained"); len(d.Brokers) != 1 || d.Brokers[0].Perm != "r" {
		t.Errorf("drained after wipe-write: brokers %+v, want read-only", d.Brokers)
	}
	added := adminJSON[admin.WritePermChange](t, ns, "cluster", "add-write", brokerName)
	if !added.Writable || len(added.NameServers) != 1 || added.NameServers[0].Topics != wiped.NameServers[0].Topics {
		t.Errorf("cluster add-write = %+v after wipe-write %+v", added, wiped)
	}
	if d := adminJSON[admin.TopicDescription](t, ns, "topic", "describe", "drained"); len(d.Brokers) != 1 || d.Brokers[0].Perm != "rw" {
		t.Errorf("drained after add-write: brokers %+v, want read and write", d.Brokers)
	}
	if err := adminFails(t, ns, "cluster", "wipe-write", "nobody"); !strings.Contains(err, "no name server knows broker nobody") {
		t.Errorf("wipe-write of an unknown broker: %v", err)
	}
	adminJSON[admin.TopicDeletion](t, ns, "topic", "delete", "drained")

	// topic create, list, update, describe
	created := adminJSON[admin.TopicChange](t, ns, "topic", "create", "orders", "--queues", "4", "--type", "fifo")
	if created.Topic != "orders" || !created.Routed || len(created.Brokers) != 1 {
		t.Errorf("topic create orders = %+v", created)
	}
	adminJSON[admin.TopicChange](t, ns, "topic", "create", "plain", "--queues", "2")
	if err := adminFails(t, ns, "topic", "create", "orders"); !strings.Contains(err, "topic orders already exists") {
		t.Errorf("creating orders twice: %v", err)
	}
	list := adminJSON[topicList](t, ns, "topic", "list")
	byName := map[string]admin.TopicSummary{}
	for _, ts := range list.Topics {
		byName[ts.Topic] = ts
	}
	if o := byName["orders"]; o.Type != "FIFO" || o.ReadQueues != 4 || o.WriteQueues != 4 || len(o.Brokers) != 1 {
		t.Errorf("topic list: orders = %+v", o)
	}
	if _, ok := byName["plain"]; !ok || len(list.Topics) != 2 {
		t.Errorf("topic list = %+v, want orders and plain only", list.Topics)
	}
	all := adminJSON[topicList](t, ns, "topic", "list", "--all")
	if len(all.Topics) <= len(list.Topics) {
		t.Errorf("topic list --all = %+v: no system topic", all.Topics)
	}
	updated := adminJSON[admin.TopicChange](t, ns, "topic", "update", "plain", "--queues", "3")
	if !updated.Routed {
		t.Errorf("topic update plain = %+v", updated)
	}
	d := adminJSON[admin.TopicDescription](t, ns, "topic", "describe", "orders")
	if d.Type != "FIFO" || len(d.Brokers) != 1 || d.Brokers[0].Perm != "rw" || d.Brokers[0].ReadQueues != 4 || len(d.Queues) != 4 || d.Messages != 0 {
		t.Errorf("topic describe orders = %+v", d)
	}

	// Messages: three with key k1 to plain, over the remoting protocol.
	p, err := peer.Dial(ctx, brokerAddr, peer.Options{RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	gen := message.NewGenerator(netip.MustParseAddr("127.0.0.1"))
	beforeSends := time.Now().Add(-time.Second)
	sentAfter := time.Now().UnixMilli()
	var uniq, offsetIDs []string
	for i := range 3 {
		id := gen.Next()
		props := map[string]string{"UNIQ_KEY": id, "KEYS": "k1 other", "TAGS": "tagA", "WAIT": "true"}
		resp := invokeOK(t, p, wire.SendMessage, &wire.SendMessageRequestHeader{
			ProducerGroup: "pg", Topic: "plain", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, QueueID: int32(i % 3),
			BornTimestamp: time.Now().UnixMilli(), Properties: string(message.AppendProperties(nil, props)), BrokerName: brokerName,
		}, []byte("body-"+string(rune('0'+i))))
		var sh wire.SendMessageResponseHeader
		if err := resp.DecodeHeader(&sh); err != nil {
			t.Fatal(err)
		}
		uniq, offsetIDs = append(uniq, id), append(offsetIDs, sh.MsgID)
	}
	if cl := adminJSON[brokerList](t, ns, "cluster", "list"); cl.Brokers[0].Status == nil || cl.Brokers[0].Status.InToday < 3 {
		t.Errorf("cluster list after 3 sends: %+v", cl.Brokers[0].Status)
	}
	if d := adminJSON[admin.TopicDescription](t, ns, "topic", "describe", "plain"); d.Messages != 3 || len(d.Queues) != 3 {
		t.Errorf("topic describe plain after 3 sends = %+v", d)
	} else {
		for _, q := range d.Queues {
			if q.LastUpdateTimestamp < sentAfter || q.LastUpdateTimestamp > time.Now().UnixMilli() {
				t.Errorf("queue %d was last stored at %d, want the time of its send (after %d)", q.QueueID, q.LastUpdateTimestamp, sentAfter)
			}
		}
	}

	// message get by offset id and by client id; message query by key
	m := adminJSON[admin.Message](t, ns, "message", "get", offsetIDs[1])
	if m.Topic != "plain" || m.MsgID != uniq[1] || m.Body != "body-1" || m.BodyEncoding != admin.BodyUTF8 || m.Tags != "tagA" || m.BrokerName != brokerName {
		t.Errorf("message get %s = %+v", offsetIDs[1], m)
	}
	m = adminJSON[admin.Message](t, ns, "message", "get", uniq[2], "--topic", "plain")
	if m.MsgID != uniq[2] || m.OffsetMsgID != offsetIDs[2] || m.Body != "body-2" || strings.Join(m.Keys, ",") != "k1,other" {
		t.Errorf("message get %s --topic plain = %+v", uniq[2], m)
	}
	if err := adminFails(t, ns, "message", "get", "not-an-id"); !strings.Contains(err, "give its topic") {
		t.Errorf("message get without topic: %v", err)
	}
	q := adminJSON[messageList](t, ns, "message", "query", "plain", "k1", "--begin", beforeSends.Format(time.RFC3339Nano), "--end", "+1m")
	if len(q.Messages) != 3 || q.Messages[0].MsgID != uniq[0] {
		t.Errorf("message query plain k1 = %d messages: %+v", len(q.Messages), q.Messages)
	}
	if q := adminJSON[messageList](t, ns, "message", "query", "plain", "k1", "--max", "2"); len(q.Messages) != 2 {
		t.Errorf("message query --max 2 = %d messages", len(q.Messages))
	}
	if q := adminJSON[messageList](t, ns, "message", "query", "plain", "nope"); len(q.Messages) != 0 {
		t.Errorf("message query nope = %+v", q.Messages)
	}

	// group create, list, update
	g := adminJSON[admin.GroupChange](t, ns, "group", "create", "billing", "--max-attempts", "3")
	if g.Group.MaxAttempts != 3 || g.Group.RetryMaxTimes != 2 || g.Group.FIFO || g.Group.Broadcast || !g.Group.ConsumeEnabled {
		t.Errorf("group create billing = %+v", g)
	}
	adminJSON[admin.GroupChange](t, ns, "group", "create", "events", "--broadcast", "--fifo")
	if err := adminFails(t, ns, "group", "create", "billing"); !strings.Contains(err, "consumer group billing already exists") {
		t.Errorf("creating billing twice: %v", err)
	}
	groups := adminJSON[groupList](t, ns, "group", "list")
	gm := map[string]admin.GroupInfo{}
	for _, gi := range groups.Groups {
		gm[gi.Group] = gi
	}
	if e := gm["events"]; !e.Broadcast || !e.FIFO || e.MaxAttempts != admin.DefaultMaxAttempts || gm["billing"].MaxAttempts != 3 {
		t.Errorf("group list = %+v", groups.Groups)
	}
	if u := adminJSON[admin.GroupChange](t, ns, "group", "update", "events", "--fifo=false", "--max-attempts", "2"); u.Group.FIFO || !u.Group.Broadcast || u.Group.MaxAttempts != 2 {
		t.Errorf("group update events = %+v", u.Group)
	}

	// A consumer of billing, subscribed to plain, comes online.
	hb, _ := json.Marshal(wire.HeartbeatData{ClientID: "127.0.0.1@admin-test", ConsumerDataSet: []wire.ConsumerData{{
		GroupName: "billing", ConsumeType: wire.ConsumePassively, MessageModel: wire.Clustering, ConsumeFromWhere: wire.ConsumeFromFirstOffset,
		SubscriptionDataSet: []wire.SubscriptionData{{Topic: "plain", SubString: "*", ExpressionType: wire.ExpressionTag}},
	}}})
	invokeOK(t, p, wire.HeartBeat, nil, hb)

	gd := adminJSON[admin.GroupDescription](t, ns, "group", "describe", "billing")
	if gd.Config == nil || gd.Config.MaxAttempts != 3 || !gd.Online || len(gd.Members) != 1 || gd.Members[0].ClientID != "127.0.0.1@admin-test" {
		t.Errorf("group describe billing: config %+v, members %+v", gd.Config, gd.Members)
	}
	if len(gd.Subscriptions) != 1 || gd.Subscriptions[0].Topic != "plain" {
		t.Errorf("group describe billing: subscriptions %+v", gd.Subscriptions)
	}
	if lag := topicLag(gd, "plain"); lag != 3 || gd.TotalLag != 3 {
		t.Errorf("group describe billing: lag in plain %d, total %d, queues %+v", lag, gd.TotalLag, gd.Queues)
	}

	// group status: this test's connection does not answer
	// GET_CONSUMER_RUNNING_INFO, so the member is listed with the error.
	// (The compatibility tests ask a real Go consumer.)
	if out, _, err := runAdmin(t, "--namesrv", ns, "group", "status", "billing"); err != nil ||
		!strings.Contains(out, "127.0.0.1@admin-test") || !strings.Contains(out, "error:") {
		t.Errorf("group status billing: %v\n%s", err, out)
	}
	if err := adminFails(t, ns, "group", "status", "nobody"); !strings.Contains(err, "no consumer of group nobody is online") {
		t.Errorf("group status of a group without consumers: %v", err)
	}
	if err := adminFails(t, ns, "group", "status", "billing", "--client", "1.2.3.4@x"); !strings.Contains(err, "consumer 1.2.3.4@x of group billing is not online") {
		t.Errorf("group status of an unknown client: %v", err)
	}

	// offset reset: to now (nothing left to consume), then back to before the sends.
	reset := adminJSON[admin.OffsetReset](t, ns, "offset", "reset", "billing", "plain", "--to-time", "now")
	if len(reset.Offsets) != 3 || sumOffsets(reset) != 3 {
		t.Errorf("offset reset to now = %+v", reset)
	}
	if lag := topicLag(adminJSON[admin.GroupDescription](t, ns, "group", "describe", "billing", "--topic", "plain"), "plain"); lag != 0 {
		t.Errorf("lag after reset to now = %d", lag)
	}
	reset = adminJSON[admin.OffsetReset](t, ns, "offset", "reset", "billing", "plain", "--to-time", strconvMillis(beforeSends))
	if sumOffsets(reset) != 0 || reset.Timestamp != beforeSends.UnixMilli() {
		t.Errorf("offset reset to before the sends = %+v", reset)
	}
	if lag := topicLag(adminJSON[admin.GroupDescription](t, ns, "group", "describe", "billing"), "plain"); lag != 3 {
		t.Errorf("lag after reset to before the sends = %d", lag)
	}

	// dlq resend: dead-letter the first message, then put it back.
	_, off, err := message.ParseOffsetID(offsetIDs[0])
	if err != nil {
		t.Fatal(err)
	}
	invokeOK(t, p, wire.ConsumerSendMsgBack, &wire.ConsumerSendMsgBackRequestHeader{
		Offset: off, Group: "billing", DelayLevel: -1, OriginMsgID: uniq[0], OriginTopic: "plain", BrokerName: brokerName,
	}, nil)
	// The broker registers the new dead-letter topic with the name server
	// in the background.
	waitFor(t, func() bool {
		_, _, err := runAdmin(t, "--namesrv", ns, "topic", "describe", "%DLQ%billing")
		return err == nil
	})
	dead := adminJSON[admin.Message](t, ns, "message", "get", uniq[0], "--topic", "%DLQ%billing")
	if dead.Properties["DLQ_ORIGIN_TOPIC"] != "plain" {
		t.Errorf("dead letter = %+v", dead)
	}
	res := adminJSON[admin.Resend](t, ns, "dlq", "resend", "billing", uniq[0])
	if res.Topic != "plain" || res.MsgID != uniq[0] || res.Group != "billing" || res.BrokerName != brokerName || res.Via != admin.ViaResend {
		t.Errorf("dlq resend = %+v", res)
	}
	back := adminJSON[admin.Message](t, ns, "message", "get", uniq[0], "--topic", "plain")
	if back.QueueOffset != res.QueueOffset || back.QueueID != res.QueueID || back.Body != "body-0" || back.ReconsumeTimes != 0 ||
		back.Properties["DLQ_ORIGIN_TOPIC"] != "" || strings.Join(back.Keys, ",") != "k1,other" {
		t.Errorf("resent message = %+v, resend %+v", back, res)
	}
	if d := adminJSON[admin.TopicDescription](t, ns, "topic", "describe", "plain"); d.Messages != 4 || !slices.Equal(d.ConsumerGroups, []string{"billing"}) {
		t.Errorf("plain holds %d messages after the resend, want 4, consumed by %v, want billing", d.Messages, d.ConsumerGroups)
	}
	if err := adminFails(t, ns, "dlq", "resend", "billing", gen.Next()); !strings.Contains(err, "has no dead letter") {
		t.Errorf("resending an unknown dead letter: %v", err)
	}

	// dlq list and resending several: two more dead letters; the one
	// resent above stays in the dead-letter topic, as in RocketMQ.
	for i := 1; i <= 2; i++ {
		_, off, err := message.ParseOffsetID(offsetIDs[i])
		if err != nil {
			t.Fatal(err)
		}
		invokeOK(t, p, wire.ConsumerSendMsgBack, &wire.ConsumerSendMsgBackRequestHeader{
			Offset: off, Group: "billing", DelayLevel: -1, OriginMsgID: uniq[i], OriginTopic: "plain", BrokerName: brokerName,
		}, nil)
	}
	dl := adminJSON[deadLetterList](t, ns, "dlq", "list", "billing")
	if got := deadLetterIDs(dl); got != strings.Join(uniq[:3], ",") {
		t.Errorf("dlq list billing = %s, want %s", got, strings.Join(uniq[:3], ","))
	}
	for _, d := range dl.DeadLetters {
		if d.OriginTopic != "plain" || d.Topic != "%DLQ%billing" || d.BrokerName != brokerName {
			t.Errorf("dead letter %s: from %q, in %s on %s", d.MsgID, d.OriginTopic, d.Topic, d.BrokerName)
		}
	}
	if got := deadLetterIDs(adminJSON[deadLetterList](t, ns, "dlq", "list", "billing", "--max", "2")); got != strings.Join(uniq[:2], ",") {
		t.Errorf("dlq list billing --max 2 = %s", got)
	}
	if got := adminJSON[deadLetterList](t, ns, "dlq", "list", "billing", "--end", strconvMillis(beforeSends)); len(got.DeadLetters) != 0 {
		t.Errorf("dead letters stored before the sends: %s", deadLetterIDs(got))
	}
	if got := adminJSON[deadLetterList](t, ns, "dlq", "list", "nobody"); len(got.DeadLetters) != 0 {
		t.Errorf("dead letters of a group without any: %s", deadLetterIDs(got))
	}
	resentAll := adminJSON[admin.ResendReport](t, ns, "dlq", "resend", "billing", "--all")
	if len(resentAll.Resent) != 3 || len(resentAll.Failed) != 0 {
		t.Errorf("dlq resend billing --all = %+v", resentAll)
	}
	two := adminJSON[admin.ResendReport](t, ns, "dlq", "resend", "billing", uniq[1], uniq[2])
	if len(two.Resent) != 2 || two.Resent[0].MsgID != uniq[1] || two.Resent[1].MsgID != uniq[2] || two.Resent[1].Topic != "plain" {
		t.Errorf("dlq resend billing %s %s = %+v", uniq[1], uniq[2], two)
	}
	if d := adminJSON[admin.TopicDescription](t, ns, "topic", "describe", "plain"); d.Messages != 9 {
		t.Errorf("plain holds %d messages after the resends, want 9", d.Messages)
	}
	if err := adminFails(t, ns, "dlq", "resend", "billing", gen.Next(), uniq[1]); !strings.Contains(err, "1 of 2 dead letters of group billing could not be resent") {
		t.Errorf("resending an unknown and a known dead letter: %v", err)
	}
	if err := adminFails(t, ns, "dlq", "resend", "billing"); !strings.Contains(err, "which dead letters?") {
		t.Errorf("dlq resend without ids: %v", err)
	}
	if err := adminFails(t, ns, "dlq", "resend", "billing", uniq[1], "--all"); !strings.Contains(err, "not both") {
		t.Errorf("dlq resend with ids and --all: %v", err)
	}

	// Errors people see.
	if err := adminFails(t, ns, "topic", "describe", "missing"); !strings.Contains(err, "topic missing not found") {
		t.Errorf("topic describe missing: %v", err)
	}
	if err := adminFails(t, ns, "group", "describe", "missing"); !strings.Contains(err, "consumer group missing not found") {
		t.Errorf("group describe missing: %v", err)
	}
	if err := adminFails(t, ns, "offset", "reset", "billing", "missing", "--to-time", "now"); !strings.Contains(err, "topic missing not found") {
		t.Errorf("offset reset in a missing topic: %v", err)
	}

	// Text output, for people.
	out, _, err := runAdmin(t, "--namesrv", ns, "topic", "list")
	if err != nil || !strings.HasPrefix(out, "TOPIC ") || !strings.Contains(out, "orders") {
		t.Errorf("topic list text: %v\n%s", err, out)
	}

	// group delete, topic delete
	if gdel := adminJSON[admin.GroupDeletion](t, ns, "group", "delete", "events"); len(gdel.Brokers) != 1 {
		t.Errorf("group delete events = %+v", gdel)
	}
	if err := adminFails(t, ns, "group", "delete", "events"); !strings.Contains(err, "not found") {
		t.Errorf("deleting events twice: %v", err)
	}
	del := adminJSON[admin.TopicDeletion](t, ns, "topic", "delete", "orders")
	if len(del.Brokers) != 1 || len(del.NameServers) != 1 {
		t.Errorf("topic delete orders = %+v", del)
	}
	for _, ts := range adminJSON[topicList](t, ns, "topic", "list").Topics {
		if ts.Topic == "orders" {
			t.Error("orders still listed after topic delete")
		}
	}
}

// waitFor polls cond for up to 15 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 15s")
		}
	}
}

// invokeOK sends a request and fails the test unless it succeeds.
func invokeOK(t *testing.T, p *peer.Peer, code wire.RequestCode, h wire.Header, body []byte) *wire.Command {
	t.Helper()
	req := wire.NewRequest(code, nil)
	if h != nil {
		req.EncodeHeader(h)
	}
	req.Body = body
	resp, err := p.Invoke(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", code, err)
	}
	if resp.ResponseCode() != wire.Success {
		t.Fatalf("%s: %s %s", code, resp.ResponseCode(), resp.Remark)
	}
	return resp
}

func topicLag(d admin.GroupDescription, topic string) int64 {
	var lag int64
	for _, q := range d.Queues {
		if q.Topic == topic {
			lag += q.Lag
		}
	}
	return lag
}

func sumOffsets(r admin.OffsetReset) int64 {
	var n int64
	for _, o := range r.Offsets {
		n += o.Offset
	}
	return n
}

func strconvMillis(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// deadLetterIDs lists the client message ids of dlq list's answer.
func deadLetterIDs(l deadLetterList) string {
	ids := make([]string, len(l.DeadLetters))
	for i, d := range l.DeadLetters {
		ids[i] = d.MsgID
	}
	return strings.Join(ids, ",")
}
