package broker

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/remoting/remotingtest"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// fuzzCodes are the requests FuzzRequests sends: everything the broker
// serves but the pulls, which may rightly wait for as long as the
// request asks.
var fuzzCodes = []wire.RequestCode{
	wire.SendMessage, wire.SendMessageV2, wire.SendBatchMessage,
	wire.SendReplyMessage, wire.SendReplyMessageV2, wire.EndTransaction,
	wire.CheckClientConfig, wire.HeartBeat, wire.UnregisterClient,
	wire.GetConsumerListByGroup, wire.QueryConsumerOffset, wire.UpdateConsumerOffset,
	wire.GetMaxOffset, wire.GetMinOffset, wire.GetEarliestMsgStoretime,
	wire.QueryTopicConsumeByWho, wire.GetBrokerRuntimeInfo, wire.GetBrokerConfig,
	wire.QueryTopicsByConsumer, wire.SearchOffsetByTimestamp, wire.LockBatchMQ,
	wire.UnlockBatchMQ, wire.ConsumerSendMsgBack, wire.QueryMessage, wire.ViewMessageByID,
	wire.UpdateAndCreateTopic, wire.DeleteTopicInBroker, wire.GetAllTopicConfig,
	wire.GetTopicConfig, wire.UpdateAndCreateSubscriptionGroup,
	wire.GetAllSubscriptionGroupConfig, wire.GetSubscriptionGroupConfig,
	wire.DeleteSubscriptionGroup, wire.GetConsumerConnectionList,
	wire.GetProducerConnectionList, wire.GetConsumeStats, wire.GetTopicStatsInfo,
	wire.InvokeBrokerToResetOffset, wire.GetConsumerRunningInfo,
	wire.ConsumeMessageDirectly, wire.KarmanResendDeadLetter, wire.UpdateBrokerConfig,
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// fuzzSeeds are well-formed requests of the kinds that carry a body or a
// header with many fields, for the fuzzer to start from.
func fuzzSeeds(f *testing.F) {
	props := wire.SendMessageRequestHeader{
		ProducerGroup: "PG", Topic: "FuzzTopic", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		QueueID: 1, BornTimestamp: 1, Properties: "KEYS\x01k1\x02TAGS\x01t\x02UNIQ_KEY\x01AB\x02",
	}
	f.Add(remotingtest.CodeIndex(fuzzCodes, wire.SendMessageV2), remotingtest.ExtLines(&wire.SendMessageRequestHeaderV2{SendMessageRequestHeader: props}), []byte("body"))
	batch := props
	batch.Batch = true
	entries, err := wire.AppendBatch(nil, []wire.BatchEntry{{Body: []byte("one")}, {Body: []byte("two"), Properties: "KEYS\x01k\x02"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(remotingtest.CodeIndex(fuzzCodes, wire.SendBatchMessage), remotingtest.ExtLines(&batch), entries)
	f.Add(remotingtest.CodeIndex(fuzzCodes, wire.HeartBeat), "", mustJSON(wire.HeartbeatData{
		ClientID:        "fuzz-client",
		ProducerDataSet: []wire.ProducerData{{GroupName: "PG"}},
		ConsumerDataSet: []wire.ConsumerData{{GroupName: "CG", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET",
			SubscriptionDataSet: []wire.SubscriptionData{{Topic: "FuzzTopic", SubString: "t || u", ExpressionType: "TAG"}}}},
	}))
	f.Add(remotingtest.CodeIndex(fuzzCodes, wire.LockBatchMQ), "", mustJSON(wire.LockBatchRequestBody{ConsumerGroup: "CG", ClientID: "fuzz-client",
		MQSet: []wire.MessageQueue{{Topic: "FuzzTopic", BrokerName: "broker-a", QueueID: 1}}}))
	f.Add(remotingtest.CodeIndex(fuzzCodes, wire.CheckClientConfig), "", []byte(`{"group":"CG","subscriptionData":{"topic":"FuzzTopic","subString":"a > 1","expressionType":"SQL92"}}`))
	f.Add(remotingtest.CodeIndex(fuzzCodes, wire.UpdateAndCreateSubscriptionGroup), "", []byte(`{"groupName":"CG2","consumeEnable":true,"retryMaxTimes":3,"consumeMessageOrderly":true}`))
	f.Add(remotingtest.CodeIndex(fuzzCodes, wire.EndTransaction), remotingtest.ExtLines(&wire.EndTransactionRequestHeader{ProducerGroup: "PG", TranStateTableOffset: 0, CommitLogOffset: 0, CommitOrRollback: 8, MsgID: "AB"}), []byte(nil))
	f.Add(remotingtest.CodeIndex(fuzzCodes, wire.UpdateConsumerOffset), remotingtest.ExtLines(&wire.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "CG", Topic: "FuzzTopic", QueueID: 1, CommitOffset: 5}), []byte(nil))
	f.Add(remotingtest.CodeIndex(fuzzCodes, wire.UpdateAndCreateTopic), remotingtest.ExtLines(&wire.CreateTopicRequestHeader{Topic: "FuzzFIFO", DefaultTopic: "TBW102", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6,
		TopicFilterType: "SINGLE_TAG", Attributes: []wire.TopicAttribute{{Key: "message.type", Value: "FIFO"}}}), []byte(nil))
	f.Add(remotingtest.CodeIndex(fuzzCodes, wire.QueryMessage), "topic=FuzzTopic\nkey=k1\nmaxNum=32\nbeginTimestamp=0\nendTimestamp=9999999999999\n", []byte(nil))
	f.Add(remotingtest.CodeIndex(fuzzCodes, wire.ViewMessageByID), "offset=0\n", []byte(nil))
	f.Add(remotingtest.CodeIndex(fuzzCodes, wire.ConsumerSendMsgBack), "offset=0\ngroup=CG\ndelayLevel=0\noriginMsgId=AB\noriginTopic=FuzzTopic\nmaxReconsumeTimes=1\n", []byte(nil))
	f.Add(remotingtest.CodeIndex(fuzzCodes, wire.SearchOffsetByTimestamp), "topic=FuzzTopic\nqueueId=1\ntimestamp=1\n", []byte(nil))
	f.Add(remotingtest.CodeIndex(fuzzCodes, wire.InvokeBrokerToResetOffset), "topic=FuzzTopic\ngroup=CG\ntimestamp=0\nisForce=true\n", []byte(nil))
	f.Add(remotingtest.CodeIndex(fuzzCodes, wire.ConsumeMessageDirectly), "consumerGroup=CG\nclientId=fuzz-client\nmsgId=AB\n", []byte(nil))
}

// FuzzRequests sends arbitrary headers and bodies with the codes the
// broker serves. Every request must be answered, promptly, and no
// handler may panic (remotingtest.MustAnswer).
func FuzzRequests(f *testing.F) {
	fuzzSeeds(f)
	// One broker for every input, so that inputs build on the state
	// earlier ones left.
	h := newHarnessWith(f, harnessOptions{
		engine: engine.Options{AutoCreateTopics: true, AutoCreateGroups: true},
		broker: Options{AutoCreateTopics: true, AutoCreateGroups: true, ClientCallTimeout: 50 * time.Millisecond},
	})
	p := h.dial(nil)
	f.Fuzz(func(t *testing.T, code uint8, ext string, body []byte) {
		remotingtest.MustAnswer(t, p, fuzzCodes[int(code)%len(fuzzCodes)], ext, body)
	})
}
