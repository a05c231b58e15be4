package broker

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/remoting/namesrv"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

func TestQueryMessage(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	h.send(p, "TopicK", 0, "one", "KEYS", "order-1 order-2", "UNIQ_KEY", "u-1")
	sent := h.send(p, "TopicK", 1, "two", "KEYS", "order-2", "UNIQ_KEY", "u-2")
	h.send(p, "Other", 0, "three", "KEYS", "order-2")
	now := time.Now().UnixMilli()
	query := func(qh *wire.QueryMessageRequestHeader) *wire.Command {
		return invoke(t, p, request(wire.QueryMessage, qh, nil))
	}

	resp := query(&wire.QueryMessageRequestHeader{Topic: "TopicK", Key: "order-2", MaxNum: 32, EndTimestamp: now + 1000})
	wantCode(t, resp, wire.Success)
	ext(t, resp, "indexLastUpdateTimestamp")
	ext(t, resp, "indexLastUpdatePhyoffset")
	if msgs := records(t, resp.Body); len(msgs) != 2 || string(msgs[0].Body) != "one" || string(msgs[1].Body) != "two" {
		t.Fatalf("by key: %d messages", len(msgs))
	}
	resp = query(&wire.QueryMessageRequestHeader{Topic: "TopicK", Key: "u-2", MaxNum: 32, UniqueKeyQuery: true})
	wantCode(t, resp, wire.Success)
	if msgs := records(t, resp.Body); len(msgs) != 1 || string(msgs[0].Body) != "two" || msgs[0].QueueID != 1 {
		t.Fatalf("by id: %+v", msgs)
	}
	wantCode(t, query(&wire.QueryMessageRequestHeader{Topic: "TopicK", Key: "none", MaxNum: 32, EndTimestamp: now + 1000}), wire.QueryNotFound)
	wantCode(t, query(&wire.QueryMessageRequestHeader{Topic: "Other", Key: "u-2", MaxNum: 32, UniqueKeyQuery: true}), wire.QueryNotFound)
	wantCode(t, query(&wire.QueryMessageRequestHeader{Topic: "TopicK", Key: "order-2", MaxNum: 0}), wire.InvalidParameter)

	// VIEW_MESSAGE_BY_ID takes the commit-log offset of an offset id.
	_, off, err := message.ParseOffsetID(sent.ExtFields["msgId"])
	if err != nil {
		t.Fatal(err)
	}
	resp = invoke(t, p, request(wire.ViewMessageByID, &wire.ViewMessageByIDRequestHeader{Offset: off}, nil))
	wantCode(t, resp, wire.Success)
	if msgs := records(t, resp.Body); len(msgs) != 1 || msgs[0].UniqKey() != "u-2" || msgs[0].CommitLogOffset != off || msgs[0].QueueOffset != 0 {
		t.Fatalf("view: %+v", msgs)
	}
	wantCode(t, invoke(t, p, request(wire.ViewMessageByID, &wire.ViewMessageByIDRequestHeader{Offset: 1 << 40}, nil)), wire.QueryNotFound)
}

func TestTopicAdmin(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	drain(h.b.TopicsChanged())
	create := func(ch *wire.CreateTopicRequestHeader) *wire.Command {
		return invoke(t, p, request(wire.UpdateAndCreateTopic, ch, nil))
	}
	resp := create(&wire.CreateTopicRequestHeader{Topic: "Orders", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: wire.TopicFilterSingleTag,
		Attributes: []wire.TopicAttribute{{Key: "message.type", Value: "FIFO"}, {Key: "owner", Value: "shop"}}})
	wantCode(t, resp, wire.Success)
	select {
	case <-h.b.TopicsChanged():
	default:
		t.Fatal("no TopicsChanged after creating a topic")
	}
	topic, err := h.eng.Topic("Orders")
	if err != nil || topic.MessageType != meta.MessageTypeFIFO || topic.Queues() != 4 || topic.Attributes["owner"] != "shop" {
		t.Fatalf("created %+v, %v", topic, err)
	}
	// Update: grow, drop an attribute.
	wantCode(t, create(&wire.CreateTopicRequestHeader{Topic: "Orders", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6, TopicFilterType: wire.TopicFilterSingleTag,
		Attributes: []wire.TopicAttribute{{Key: "owner", Delete: true}}}), wire.Success)
	if topic, _ = h.eng.Topic("Orders"); topic.Queues() != 8 || topic.MessageType != meta.MessageTypeFIFO || topic.Attributes["owner"] != "" {
		t.Fatalf("updated %+v", topic)
	}

	resp = invoke(t, p, request(wire.GetAllTopicConfig, nil, nil))
	wantCode(t, resp, wire.Success)
	var w TopicConfigWrapper
	if err := json.Unmarshal(resp.Body, &w); err != nil {
		t.Fatal(err)
	}
	if c := w.TopicConfigTable["Orders"]; c.ReadQueueNums != 8 || c.Perm != 6 || c.Attributes["message.type"] != "FIFO" || !c.Order {
		t.Fatalf("topic config %+v", c)
	}
	if c := w.TopicConfigTable["TBW102"]; c.Perm != 7 {
		t.Fatalf("TBW102 config %+v", c)
	}
	// GET_TOPIC_CONFIG answers the same configuration for one topic.
	resp = invoke(t, p, request(wire.GetTopicConfig, &wire.TopicRequestHeader{Topic: "Orders"}, nil))
	wantCode(t, resp, wire.Success)
	var one namesrv.TopicConfig
	if err := json.Unmarshal(resp.Body, &one); err != nil || !reflect.DeepEqual(one, w.TopicConfigTable["Orders"]) {
		t.Fatalf("GET_TOPIC_CONFIG: %s (%v), want %+v", resp.Body, err, w.TopicConfigTable["Orders"])
	}
	wantCode(t, invoke(t, p, request(wire.GetTopicConfig, &wire.TopicRequestHeader{Topic: "Nope"}, nil)), wire.TopicNotExist)

	for _, tt := range []struct {
		name string
		h    *wire.CreateTopicRequestHeader
		want wire.ResponseCode
	}{
		{"bad type", &wire.CreateTopicRequestHeader{Topic: "X", Perm: 6, TopicFilterType: wire.TopicFilterSingleTag, Attributes: []wire.TopicAttribute{{Key: "message.type", Value: "ODD"}}}, wire.InvalidParameter},
		{"system topic", &wire.CreateTopicRequestHeader{Topic: "SCHEDULE_TOPIC_XXXX", Perm: 6, TopicFilterType: wire.TopicFilterSingleTag}, wire.NoPermission},
		{"bad name", &wire.CreateTopicRequestHeader{Topic: "a/b", Perm: 6, TopicFilterType: wire.TopicFilterSingleTag}, wire.InvalidParameter},
		{"perm 0", &wire.CreateTopicRequestHeader{Topic: "X", Perm: 0, TopicFilterType: wire.TopicFilterSingleTag}, wire.InvalidParameter},
	} {
		t.Run(tt.name, func(t *testing.T) { wantCode(t, create(tt.h), tt.want) })
	}

	drain(h.b.TopicsChanged())
	wantCode(t, invoke(t, p, request(wire.DeleteTopicInBroker, &wire.DeleteTopicRequestHeader{Topic: "Orders"}, nil)), wire.Success)
	if _, err := h.eng.Topic("Orders"); err == nil {
		t.Fatal("topic still there")
	}
	select {
	case <-h.b.TopicsChanged():
	default:
		t.Fatal("no TopicsChanged after deleting a topic")
	}
	wantCode(t, invoke(t, p, request(wire.DeleteTopicInBroker, &wire.DeleteTopicRequestHeader{Topic: "Orders"}, nil)), wire.TopicNotExist)
}

func TestGroupAdmin(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	body := []byte(`{"groupName":"cg","consumeBroadcastEnable":true,"fifo":true,"retryMaxTimes":3,
		"groupRetryPolicy":{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000,5000,100,200]}}}`)
	wantCode(t, invoke(t, p, request(wire.UpdateAndCreateSubscriptionGroup, nil, body)), wire.Success)
	g, err := h.eng.Group("cg")
	if err != nil || !g.Broadcast || !g.FIFO || g.ConsumeDisabled || g.MaxAttempts != 4 || len(g.RetryBackoff) != 2 || g.RetryBackoff[0] != 100*time.Millisecond {
		t.Fatalf("group %+v, %v", g, err)
	}
	body = []byte(`{"groupName":"exp","consumeEnable":false,"retryMaxTimes":4,"groupRetryPolicy":{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":10,"max":30,"multiplier":2}}}`)
	wantCode(t, invoke(t, p, request(wire.UpdateAndCreateSubscriptionGroup, nil, body)), wire.Success)
	if g, _ = h.eng.Group("exp"); !g.ConsumeDisabled || len(g.RetryBackoff) != 5 || g.RetryBackoff[0] != 10*time.Millisecond || g.RetryBackoff[2] != 30*time.Millisecond {
		t.Fatalf("exponential group %+v", g)
	}

	resp := invoke(t, p, request(wire.GetAllSubscriptionGroupConfig, nil, nil))
	wantCode(t, resp, wire.Success)
	var w SubscriptionGroupWrapper
	if err := json.Unmarshal(resp.Body, &w); err != nil {
		t.Fatal(err)
	}
	c := w.SubscriptionGroupTable["cg"]
	if c.GroupName != "cg" || !c.ConsumeEnable || !c.ConsumeBroadcastEnable || !c.ConsumeMessageOrderly || c.RetryMaxTimes != 3 || c.RetryQueueNums != 1 {
		t.Fatalf("group config %+v", c)
	}
	// GET_SUBSCRIPTIONGROUP_CONFIG answers the same for one group, and
	// does not create the groups it is asked about.
	resp = invoke(t, p, request(wire.GetSubscriptionGroupConfig, &wire.GroupRequestHeader{Group: "cg"}, nil))
	wantCode(t, resp, wire.Success)
	var one SubscriptionGroupConfig
	if err := json.Unmarshal(resp.Body, &one); err != nil || !reflect.DeepEqual(one, c) {
		t.Fatalf("GET_SUBSCRIPTIONGROUP_CONFIG: %s (%v), want %+v", resp.Body, err, c)
	}
	wantCode(t, invoke(t, p, request(wire.GetSubscriptionGroupConfig, &wire.GroupRequestHeader{Group: "nobody"}, nil)), wire.SubscriptionGroupNotExist)
	if _, err := h.eng.Group("nobody"); err == nil {
		t.Fatal("asking for a group's configuration created it")
	}
	// The answer reads back into the same group.
	back, err := groupOf(c)
	if err != nil || back.MaxAttempts != g.MaxAttempts-1 && back.MaxAttempts != 4 || len(back.RetryBackoff) != 2 {
		t.Fatalf("round trip %+v, %v", back, err)
	}

	wantCode(t, invoke(t, p, request(wire.UpdateAndCreateSubscriptionGroup, nil, []byte(`{"groupName":"bad name"}`))), wire.InvalidParameter)
	wantCode(t, invoke(t, p, request(wire.UpdateAndCreateSubscriptionGroup, nil, []byte(`{"groupName":"g","retryMaxTimes":-2}`))), wire.InvalidParameter)
	wantCode(t, invoke(t, p, request(wire.DeleteSubscriptionGroup, &wire.DeleteSubscriptionGroupRequestHeader{GroupName: "cg"}, nil)), wire.Success)
	if _, err := h.eng.Group("cg"); err == nil {
		t.Fatal("group still there")
	}
	wantCode(t, invoke(t, p, request(wire.DeleteSubscriptionGroup, &wire.DeleteSubscriptionGroupRequestHeader{GroupName: "cg"}, nil)), wire.SubscriptionGroupNotExist)
}

func TestConsumerConnectionAndStats(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	if err := h.eng.CreateTopic(meta.Topic{Name: "TopicT", ReadQueues: 2, WriteQueues: 2}); err != nil {
		t.Fatal(err)
	}
	sentAfter := time.Now().UnixMilli()
	for range 3 {
		h.send(p, "TopicT", 0, "m")
	}
	h.send(p, "TopicT", 1, "m")
	heartbeat(t, p, "c1", "cg", "TopicT", "a || b")
	if err := h.eng.CommitOffset("cg", "TopicT", 0, 1); err != nil {
		t.Fatal(err)
	}
	h.dispatched()

	resp := invoke(t, p, request(wire.GetConsumerConnectionList, &wire.GetConsumerConnectionListRequestHeader{ConsumerGroup: "cg"}, nil))
	wantCode(t, resp, wire.Success)
	var cc ConsumerConnection
	if err := json.Unmarshal(resp.Body, &cc); err != nil {
		t.Fatal(err)
	}
	if len(cc.ConnectionSet) != 1 || cc.ConnectionSet[0].ClientID != "c1" || cc.ConnectionSet[0].Language != "GO" || cc.ConnectionSet[0].ClientAddr == "" ||
		cc.MessageModel != "CLUSTERING" || cc.ConsumeType != "CONSUME_PASSIVELY" || cc.SubscriptionTable["TopicT"].SubString != "a || b" {
		t.Fatalf("consumer connection %s", resp.Body)
	}
	wantCode(t, invoke(t, p, request(wire.GetConsumerConnectionList, &wire.GetConsumerConnectionListRequestHeader{ConsumerGroup: "nobody"}, nil)), wire.ConsumerNotOnline)

	resp = invoke(t, p, request(wire.GetConsumeStats, &wire.GetConsumeStatsRequestHeader{ConsumerGroup: "cg", Topic: "TopicT"}, nil))
	wantCode(t, resp, wire.Success)
	var cs ConsumeStats
	if err := json.Unmarshal(resp.Body, &cs); err != nil {
		t.Fatal(err)
	}
	q0 := cs.OffsetTable[wire.MessageQueue{Topic: "TopicT", BrokerName: DefaultBrokerName, QueueID: 0}]
	q1 := cs.OffsetTable[wire.MessageQueue{Topic: "TopicT", BrokerName: DefaultBrokerName, QueueID: 1}]
	if len(cs.OffsetTable) != 2 || q0.BrokerOffset != 3 || q0.ConsumerOffset != 1 || q1.BrokerOffset != 1 || q1.ConsumerOffset != 0 {
		t.Fatalf("consume stats %s", resp.Body)
	}
	// Without a topic: every subscribed topic and the retry topic.
	resp = invoke(t, p, request(wire.GetConsumeStats, &wire.GetConsumeStatsRequestHeader{ConsumerGroup: "cg"}, nil))
	wantCode(t, resp, wire.Success)
	if err := json.Unmarshal(resp.Body, &cs); err != nil || len(cs.OffsetTable) != 3 {
		t.Fatalf("consume stats of the group: %s, %v", resp.Body, err)
	}
	// A group with committed offsets and no consumer online: the topics
	// it committed in, as Java answers.
	if err := h.eng.CommitOffset("offline", "TopicT", 1, 1); err != nil {
		t.Fatal(err)
	}
	resp = invoke(t, p, request(wire.GetConsumeStats, &wire.GetConsumeStatsRequestHeader{ConsumerGroup: "offline"}, nil))
	wantCode(t, resp, wire.Success)
	cs = ConsumeStats{}
	if err := json.Unmarshal(resp.Body, &cs); err != nil {
		t.Fatal(err)
	}
	if q1 := cs.OffsetTable[wire.MessageQueue{Topic: "TopicT", BrokerName: DefaultBrokerName, QueueID: 1}]; len(cs.OffsetTable) != 2 || q1.ConsumerOffset != 1 || q1.BrokerOffset != 1 {
		t.Fatalf("consume stats of a group without consumers: %s", resp.Body)
	}

	resp = invoke(t, p, request(wire.GetTopicStatsInfo, &wire.GetTopicStatsInfoRequestHeader{Topic: "TopicT"}, nil))
	wantCode(t, resp, wire.Success)
	var ts TopicStatsTable
	if err := json.Unmarshal(resp.Body, &ts); err != nil {
		t.Fatal(err)
	}
	last, err := h.eng.StoreTime("TopicT", 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if o := ts.OffsetTable[wire.MessageQueue{Topic: "TopicT", BrokerName: DefaultBrokerName, QueueID: 0}]; o.MinOffset != 0 || o.MaxOffset != 3 || o.LastUpdateTimestamp != last || last < sentAfter {
		t.Fatalf("topic stats %s, want the last store time %d", resp.Body, last)
	}
	wantCode(t, invoke(t, p, request(wire.GetTopicStatsInfo, &wire.GetTopicStatsInfoRequestHeader{Topic: "Nope"}, nil)), wire.TopicNotExist)
}

// GET_EARLIEST_MSG_STORETIME answers the store time of a queue's first
// message, and -1 for an empty queue or an unknown topic.
func TestEarliestMsgStoretime(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	if err := h.eng.CreateTopic(meta.Topic{Name: "TopicE", ReadQueues: 2, WriteQueues: 2}); err != nil {
		t.Fatal(err)
	}
	before := time.Now().UnixMilli()
	h.send(p, "TopicE", 0, "first")
	h.send(p, "TopicE", 0, "second")
	h.dispatched()
	first, err := h.eng.StoreTime("TopicE", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	earliest := func(topic string, queue int32) int64 {
		t.Helper()
		resp := invoke(t, p, request(wire.GetEarliestMsgStoretime, &wire.GetEarliestMsgStoretimeRequestHeader{Topic: topic, QueueID: queue}, nil))
		wantCode(t, resp, wire.Success)
		var rh wire.GetEarliestMsgStoretimeResponseHeader
		if err := resp.DecodeHeader(&rh); err != nil {
			t.Fatal(err)
		}
		return rh.Timestamp
	}
	if got := earliest("TopicE", 0); got != first || got < before {
		t.Errorf("earliest store time of a queue = %d, want %d (sent after %d)", got, first, before)
	}
	if got := earliest("TopicE", 1); got != -1 {
		t.Errorf("earliest store time of an empty queue = %d, want -1", got)
	}
	if got := earliest("Nope", 0); got != -1 {
		t.Errorf("earliest store time of an unknown topic = %d, want -1", got)
	}
}

// GET_PRODUCER_CONNECTION_LIST lists a producer group's live clients, and
// answers SYSTEM_ERROR, as Java does, for a group without any.
func TestProducerConnectionList(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	wantCode(t, invoke(t, p, request(wire.GetProducerConnectionList, &wire.GetProducerConnectionListRequestHeader{ProducerGroup: "pg"}, nil)), wire.SystemError)
	heartbeat(t, p, "p1", "pg", "", "")
	resp := invoke(t, p, request(wire.GetProducerConnectionList, &wire.GetProducerConnectionListRequestHeader{ProducerGroup: "pg"}, nil))
	wantCode(t, resp, wire.Success)
	var pc ProducerConnection
	if err := json.Unmarshal(resp.Body, &pc); err != nil {
		t.Fatal(err)
	}
	if len(pc.ConnectionSet) != 1 || pc.ConnectionSet[0].ClientID != "p1" || pc.ConnectionSet[0].Language != "GO" || pc.ConnectionSet[0].ClientAddr == "" {
		t.Fatalf("producer connection %s", resp.Body)
	}
}

// Every request refuses a missing or malformed header with
// INVALID_PARAMETER, and the connection keeps serving.
func TestBadHeaders(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	codes := []wire.RequestCode{
		wire.SendMessage, wire.SendMessageV2, wire.SendBatchMessage, wire.SendReplyMessage, wire.EndTransaction,
		wire.PullMessage, wire.HeartBeat, wire.UnregisterClient, wire.GetConsumerListByGroup,
		wire.QueryConsumerOffset, wire.UpdateConsumerOffset, wire.GetMaxOffset, wire.GetMinOffset,
		wire.SearchOffsetByTimestamp, wire.LockBatchMQ, wire.UnlockBatchMQ, wire.ConsumerSendMsgBack,
		wire.QueryMessage, wire.ViewMessageByID, wire.UpdateAndCreateTopic, wire.DeleteTopicInBroker,
		wire.UpdateAndCreateSubscriptionGroup, wire.DeleteSubscriptionGroup, wire.GetConsumerConnectionList,
		wire.GetProducerConnectionList, wire.GetConsumeStats, wire.GetTopicStatsInfo,
		wire.GetEarliestMsgStoretime, wire.QueryTopicConsumeByWho, wire.QueryTopicsByConsumer,
		wire.LitePullMessage, wire.CheckClientConfig, wire.GetTopicConfig, wire.GetSubscriptionGroupConfig,
		wire.GetConsumerRunningInfo, wire.ConsumeMessageDirectly,
	}
	for _, code := range codes {
		for _, ext := range []map[string]string{nil, {"topic": "", "queueId": "x", "consumerGroup": "", "offset": "1e9", "groupName": ""}} {
			req := &wire.Command{Code: int32(code), ExtFields: ext, Body: []byte("{")}
			resp := invoke(t, p, req)
			if resp.ResponseCode() != wire.InvalidParameter {
				t.Errorf("%s with %v: %s %q", code, ext, resp.ResponseCode(), resp.Remark)
			}
		}
	}
	wantCode(t, invoke(t, p, &wire.Command{Code: 9999}), wire.RequestCodeNotSupported)
	h.send(p, "TopicA", 0, "still serving")
}

// TestTopicsChangedByEngine: a topic another front-end (or the engine
// itself) creates or deletes reaches the name servers at once, not only
// with the next periodic registration.
func TestTopicsChangedByEngine(t *testing.T) {
	h := newHarness(t)
	drain(h.b.TopicsChanged())
	changed := func(what string) {
		t.Helper()
		select {
		case <-h.b.TopicsChanged():
		case <-time.After(10 * time.Second):
			t.Fatalf("no TopicsChanged after %s", what)
		}
	}
	if _, _, err := h.eng.EnsureTopic(meta.Topic{Name: "FromElsewhere", ReadQueues: 2, WriteQueues: 2}); err != nil {
		t.Fatal(err)
	}
	changed("the engine created a topic")
	if err := h.eng.DeleteTopic("FromElsewhere"); err != nil {
		t.Fatal(err)
	}
	changed("the engine deleted a topic")
}

// KARMAN_RESEND_DEAD_LETTER puts a dead letter back on the topic it came
// from and names that topic in its answer, whether the dead letter says so
// with DLQ_ORIGIN_TOPIC (Karman, RocketMQ 5) or only with RETRY_TOPIC.
func TestResendDeadLetter(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	dlq := message.DLQTopic("G")
	h.send(p, dlq, 0, "first", "UNIQ_KEY", "u-1", message.PropertyDLQOriginTopic, "Orders", message.PropertyRetryTopic, "Other")
	h.send(p, dlq, 0, "second", "UNIQ_KEY", "u-2", message.PropertyRetryTopic, "Payments")
	for _, c := range []struct{ id, topic, body string }{{"u-1", "Orders", "first"}, {"u-2", "Payments", "second"}} {
		resp := invoke(t, p, request(wire.KarmanResendDeadLetter, &wire.ResendDeadLetterRequestHeader{Group: "G", MsgID: c.id}, nil))
		wantCode(t, resp, wire.Success)
		var got wire.ResendDeadLetterResponseHeader
		if err := resp.DecodeHeader(&got); err != nil {
			t.Fatal(err)
		}
		if got.Topic != c.topic || got.MsgID != c.id || got.QueueOffset != 0 {
			t.Errorf("resend %s: answer %+v, want topic %s", c.id, got, c.topic)
		}
		h.dispatched()
		msgs := records(t, h.pull(p, pullHeader("reader", c.topic, got.QueueID, 0)).Body)
		if len(msgs) != 1 || string(msgs[0].Body) != c.body || msgs[0].UniqKey() != c.id {
			t.Errorf("resend %s: %s holds %+v", c.id, c.topic, msgs)
		}
	}
	resp := invoke(t, p, request(wire.KarmanResendDeadLetter, &wire.ResendDeadLetterRequestHeader{Group: "G", MsgID: "u-3"}, nil))
	wantCode(t, resp, wire.QueryNotFound)
}

// QUERY_TOPIC_CONSUME_BY_WHO names the groups with an online subscriber
// or committed offsets in a topic; QUERY_TOPICS_BY_CONSUMER the topics a
// group committed offsets in.
func TestConsumedBy(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	for _, name := range []string{"TopicA", "TopicB"} {
		if err := h.eng.CreateTopic(meta.Topic{Name: name, ReadQueues: 1, WriteQueues: 1}); err != nil {
			t.Fatal(err)
		}
	}
	heartbeat(t, p, "c1", "online", "TopicA", "*")
	for _, c := range []struct{ group, topic string }{{"committed", "TopicA"}, {"committed", "TopicB"}, {"online", "TopicA"}} {
		if err := h.eng.CommitOffset(c.group, c.topic, 0, 0); err != nil {
			t.Fatal(err)
		}
	}

	resp := invoke(t, p, request(wire.QueryTopicConsumeByWho, &wire.TopicRequestHeader{Topic: "TopicA"}, nil))
	wantCode(t, resp, wire.Success)
	var groups wire.GroupListBody
	if err := json.Unmarshal(resp.Body, &groups); err != nil || !slices.Equal(groups.GroupList, []string{"committed", "online"}) {
		t.Errorf("groups consuming TopicA: %s, %v", resp.Body, err)
	}
	resp = invoke(t, p, request(wire.QueryTopicConsumeByWho, &wire.TopicRequestHeader{Topic: "Nobody"}, nil))
	wantCode(t, resp, wire.Success)
	if string(resp.Body) != `{"groupList":[]}` {
		t.Errorf("groups consuming a topic nobody consumes: %s", resp.Body)
	}

	resp = invoke(t, p, request(wire.QueryTopicsByConsumer, &wire.GroupRequestHeader{Group: "committed"}, nil))
	wantCode(t, resp, wire.Success)
	var topics wire.TopicListBody
	if err := json.Unmarshal(resp.Body, &topics); err != nil || !slices.Equal(topics.TopicList, []string{"TopicA", "TopicB"}) || topics.BrokerAddr != h.b.opts.Addr {
		t.Errorf("topics of group committed: %s, %v", resp.Body, err)
	}
}
