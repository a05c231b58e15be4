package wire

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// headerCase decodes ext into a fresh header, compares with want, and
// checks that encoding want gives ext back.
type headerCase struct {
	name string
	ext  map[string]string
	want Header
	// encoded is what EncodeFields produces when it differs from ext.
	encoded map[string]string
}

func TestHeaderRoundTrip(t *testing.T) {
	cases := []headerCase{
		{name: "send v1", ext: exampleExt, want: &SendMessageRequestHeader{
			ProducerGroup: "pg", Topic: "TopicA", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, QueueID: 1,
			BornTimestamp: 1700000000000, Properties: "UNIQ_KEY\x01AB\x02WAIT\x01true\x02",
			MaxReconsumeTimes: ptr[int32](0), BrokerName: "broker-a"}},
		{name: "send v2 batch", ext: map[string]string{"a": "pg", "b": "T", "c": "TBW102", "d": "4", "e": "3", "f": "0",
			"g": "1700000000000", "h": "0", "i": "", "j": "0", "k": "false", "l": "16", "m": "true", "n": "broker-b"},
			want: &SendMessageRequestHeaderV2{SendMessageRequestHeader{ProducerGroup: "pg", Topic: "T", DefaultTopic: "TBW102",
				DefaultTopicQueueNums: 4, QueueID: 3, BornTimestamp: 1700000000000, MaxReconsumeTimes: ptr[int32](16),
				Batch: true, BrokerName: "broker-b"}}},
		{name: "send response", ext: map[string]string{"msgId": "C0A8000A00002A9F0000000000000000", "queueId": "2",
			"queueOffset": "42", "transactionId": "AB", "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"},
			want: &SendMessageResponseHeader{MsgID: "C0A8000A00002A9F0000000000000000", QueueID: 2, QueueOffset: 42,
				TransactionID: "AB", MsgRegion: "DefaultRegion", TraceOn: "true"}},
		{name: "pull", ext: map[string]string{"consumerGroup": "cg", "topic": "T", "queueId": "0", "queueOffset": "10",
			"maxMsgNums": "32", "sysFlag": "3", "commitOffset": "9", "suspendTimeoutMillis": "20000", "subscription": "",
			"subVersion": "0", "expressionType": "TAG", "bname": "b"},
			want: &PullMessageRequestHeader{ConsumerGroup: "cg", Topic: "T", QueueOffset: 10, MaxMsgNums: 32,
				SysFlag: PullFlagSuspend | PullFlagCommitOffset, CommitOffset: 9, SuspendTimeoutMillis: 20000,
				ExpressionType: "TAG", BrokerName: "b"}},
		{name: "pull response", ext: map[string]string{"suggestWhichBrokerId": "0", "nextBeginOffset": "5", "minOffset": "0", "maxOffset": "5"},
			want: &PullMessageResponseHeader{NextBeginOffset: 5, MaxOffset: 5}},
		{name: "query offset", ext: map[string]string{"consumerGroup": "cg", "topic": "T", "queueId": "1", "bname": "b"},
			want: &QueryConsumerOffsetRequestHeader{ConsumerGroup: "cg", Topic: "T", QueueID: 1, SetZeroIfNotFound: true, BrokerName: "b"}},
		{name: "query offset no zero", ext: map[string]string{"consumerGroup": "cg", "topic": "T", "queueId": "1", "setZeroIfNotFound": "false"},
			want: &QueryConsumerOffsetRequestHeader{ConsumerGroup: "cg", Topic: "T", QueueID: 1}},
		{name: "update offset", ext: map[string]string{"consumerGroup": "cg", "topic": "T", "queueId": "1", "commitOffset": "77", "bname": "b"},
			want: &UpdateConsumerOffsetRequestHeader{ConsumerGroup: "cg", Topic: "T", QueueID: 1, CommitOffset: 77, BrokerName: "b"}},
		{name: "max offset", ext: map[string]string{"topic": "T", "queueId": "1", "bname": "b"},
			want: &GetMaxOffsetRequestHeader{Topic: "T", QueueID: 1, Committed: true, BrokerName: "b"}},
		{name: "min offset", ext: map[string]string{"topic": "T", "queueId": "1"},
			want: &GetMinOffsetRequestHeader{Topic: "T", QueueID: 1}},
		{name: "search offset", ext: map[string]string{"topic": "T", "queueId": "1", "timestamp": "1700000000000", "bname": "b"},
			want:    &SearchOffsetRequestHeader{Topic: "T", QueueID: 1, Timestamp: 1700000000000, BoundaryType: BoundaryLower, BrokerName: "b"},
			encoded: map[string]string{"topic": "T", "queueId": "1", "timestamp": "1700000000000", "bname": "b", "boundaryType": "LOWER"}},
		{name: "search offset upper", ext: map[string]string{"topic": "T", "queueId": "1", "timestamp": "5", "boundaryType": "upper"},
			want:    &SearchOffsetRequestHeader{Topic: "T", QueueID: 1, Timestamp: 5, BoundaryType: BoundaryUpper},
			encoded: map[string]string{"topic": "T", "queueId": "1", "timestamp": "5", "boundaryType": "UPPER"}},
		{name: "offset response", ext: map[string]string{"offset": "-1"}, want: &OffsetResponseHeader{Offset: -1}},
		{name: "earliest store time", ext: map[string]string{"topic": "T", "queueId": "2", "bname": "b"},
			want: &GetEarliestMsgStoretimeRequestHeader{Topic: "T", QueueID: 2, BrokerName: "b"}},
		{name: "earliest store time response", ext: map[string]string{"timestamp": "1700000000123"},
			want: &GetEarliestMsgStoretimeResponseHeader{Timestamp: 1700000000123}},
		{name: "send back", ext: map[string]string{"offset": "1234", "group": "cg", "delayLevel": "0", "originMsgId": "ID",
			"originTopic": "T", "unitMode": "false", "maxReconsumeTimes": "16", "bname": "b"},
			want: &ConsumerSendMsgBackRequestHeader{Offset: 1234, Group: "cg", OriginMsgID: "ID", OriginTopic: "T",
				MaxReconsumeTimes: ptr[int32](16), BrokerName: "b"}},
		{name: "consumer list", ext: map[string]string{"consumerGroup": "cg"}, want: &GetConsumerListByGroupRequestHeader{ConsumerGroup: "cg"}},
		{name: "notify ids changed", ext: map[string]string{"consumerGroup": "cg"}, want: &NotifyConsumerIdsChangedRequestHeader{ConsumerGroup: "cg"}},
		{name: "unregister client", ext: map[string]string{"clientID": "c", "consumerGroup": "cg"},
			want: &UnregisterClientRequestHeader{ClientID: "c", ConsumerGroup: "cg"}},
		{name: "running info", ext: map[string]string{"consumerGroup": "cg", "clientId": "c", "jstackEnable": "false"},
			want: &GetConsumerRunningInfoRequestHeader{ConsumerGroup: "cg", ClientID: "c"}},
		{name: "reset offset", ext: map[string]string{"topic": "T", "group": "g", "timestamp": "9", "isForce": "true", "queueId": "2", "offset": "100"},
			want: &ResetOffsetRequestHeader{Topic: "T", Group: "g", Timestamp: 9, IsForce: true, QueueID: ptr[int32](2), Offset: ptr[int64](100)}},
		{name: "end transaction", ext: map[string]string{"producerGroup": "pg", "tranStateTableOffset": "3", "commitLogOffset": "4096",
			"commitOrRollback": "8", "fromTransactionCheck": "false", "msgId": "U", "transactionId": "X", "bname": "b"},
			want: &EndTransactionRequestHeader{ProducerGroup: "pg", TranStateTableOffset: 3, CommitLogOffset: 4096,
				CommitOrRollback: TransactionCommitType, MsgID: "U", TransactionID: "X", BrokerName: "b"}},
		{name: "check transaction", ext: map[string]string{"tranStateTableOffset": "3", "commitLogOffset": "4096", "msgId": "U",
			"transactionId": "X", "offsetMsgId": "O", "topic": "T", "bname": "b"},
			want: &CheckTransactionStateRequestHeader{Topic: "T", TranStateTableOffset: 3, CommitLogOffset: 4096, MsgID: "U",
				TransactionID: "X", OffsetMsgID: "O", BrokerName: "b"}},
		{name: "route", ext: map[string]string{"topic": "T"}, want: &GetRouteInfoRequestHeader{Topic: "T"}},
		{name: "delete topic", ext: map[string]string{"topic": "T", "clusterName": "c"}, want: &DeleteTopicRequestHeader{Topic: "T", ClusterName: "c"}},
		{name: "register broker", ext: map[string]string{"brokerName": "b", "brokerAddr": "1.2.3.4:10911", "clusterName": "c",
			"haServerAddr": "1.2.3.4:10912", "brokerId": "0", "enableActingMaster": "false", "compressed": "false", "bodyCrc32": "12345"},
			want: &RegisterBrokerRequestHeader{BrokerName: "b", BrokerAddr: "1.2.3.4:10911", ClusterName: "c",
				HAServerAddr: "1.2.3.4:10912", BodyCRC32: 12345}},
		{name: "register broker response", ext: map[string]string{"masterAddr": "m"}, want: &RegisterBrokerResponseHeader{MasterAddr: "m"}},
		{name: "unregister broker", ext: map[string]string{"brokerName": "b", "brokerAddr": "a", "clusterName": "c", "brokerId": "1"},
			want: &UnregisterBrokerRequestHeader{BrokerName: "b", BrokerAddr: "a", ClusterName: "c", BrokerID: 1}},
		{name: "create topic", ext: map[string]string{"topic": "T", "defaultTopic": "TBW102", "readQueueNums": "8", "writeQueueNums": "8",
			"perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false", "attributes": "+message.type=FIFO,-old"},
			want: &CreateTopicRequestHeader{Topic: "T", DefaultTopic: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8,
				Perm: PermRead | PermWrite, TopicFilterType: TopicFilterSingleTag,
				Attributes: []TopicAttribute{{Key: "message.type", Value: "FIFO"}, {Key: "old", Delete: true}}}},
		{name: "delete group", ext: map[string]string{"groupName": "g", "cleanOffset": "true"},
			want: &DeleteSubscriptionGroupRequestHeader{GroupName: "g", CleanOffset: true}},
		{name: "query message", ext: map[string]string{"topic": "T", "key": "k", "maxNum": "32", "beginTimestamp": "1", "endTimestamp": "2", "_UNIQUE_KEY_QUERY": "true"},
			want: &QueryMessageRequestHeader{Topic: "T", Key: "k", MaxNum: 32, BeginTimestamp: 1, EndTimestamp: 2, UniqueKeyQuery: true}},
		{name: "query message response", ext: map[string]string{"indexLastUpdateTimestamp": "1", "indexLastUpdatePhyoffset": "2"},
			want: &QueryMessageResponseHeader{IndexLastUpdateTimestamp: 1, IndexLastUpdatePhyoffset: 2}},
		{name: "view by id", ext: map[string]string{"offset": "4096"}, want: &ViewMessageByIDRequestHeader{Offset: 4096}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := reflect.New(reflect.TypeOf(tc.want).Elem()).Interface().(Header)
			if err := got.DecodeFields(tc.ext); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
			enc := map[string]string{}
			tc.want.EncodeFields(enc)
			want := tc.encoded
			if want == nil {
				want = tc.ext
			}
			if !maps.Equal(enc, want) {
				t.Fatalf("encoded %v\nwant    %v", enc, want)
			}
			// Through a command too.
			cmd := NewRequest(SendMessage, nil)
			cmd.EncodeHeader(tc.want)
			again := reflect.New(reflect.TypeOf(tc.want).Elem()).Interface().(Header)
			if err := cmd.DecodeHeader(again); err != nil || !reflect.DeepEqual(again, tc.want) {
				t.Fatalf("via command: %v %+v", err, again)
			}
		})
	}
}

func TestHeaderErrors(t *testing.T) {
	send := func(mut func(m map[string]string)) map[string]string {
		m := maps.Clone(exampleExt)
		mut(m)
		return m
	}
	cases := []struct {
		name  string
		h     Header
		ext   map[string]string
		want  error
		field string
	}{
		{"send missing topic", &SendMessageRequestHeader{}, send(func(m map[string]string) { delete(m, "topic") }), ErrMissingField, "topic|b"},
		{"send empty group", &SendMessageRequestHeader{}, send(func(m map[string]string) { m["producerGroup"] = "" }), ErrInvalidField, "producerGroup|a"},
		{"send bad queueId", &SendMessageRequestHeader{}, send(func(m map[string]string) { m["queueId"] = "one" }), ErrInvalidField, "queueId|e"},
		{"send queueId overflow", &SendMessageRequestHeader{}, send(func(m map[string]string) { m["queueId"] = "2147483648" }), ErrInvalidField, "queueId|e"},
		{"send empty required int", &SendMessageRequestHeader{}, send(func(m map[string]string) { m["sysFlag"] = "" }), ErrInvalidField, "sysFlag|f"},
		{"send bad bool", &SendMessageRequestHeader{}, send(func(m map[string]string) { m["batch"] = "yes" }), ErrInvalidField, "batch|m"},
		{"send nil map", &SendMessageRequestHeader{}, nil, ErrMissingField, "producerGroup|a"},
		{"pull missing offset", &PullMessageRequestHeader{}, map[string]string{"consumerGroup": "g", "topic": "t", "queueId": "1"}, ErrMissingField, "queueOffset"},
		{"pull response missing", &PullMessageResponseHeader{}, map[string]string{"nextBeginOffset": "1"}, ErrMissingField, "suggestWhichBrokerId"},
		{"end tx bad state", &EndTransactionRequestHeader{}, map[string]string{"producerGroup": "pg", "tranStateTableOffset": "1",
			"commitLogOffset": "1", "commitOrRollback": "4", "msgId": "m"}, ErrInvalidField, "commitOrRollback"},
		{"search bad boundary", &SearchOffsetRequestHeader{}, map[string]string{"topic": "t", "queueId": "1", "timestamp": "1", "boundaryType": "middle"}, ErrInvalidField, "boundaryType"},
		{"offset response missing", &OffsetResponseHeader{}, map[string]string{}, ErrMissingField, "offset"},
		{"offset response bad", &OffsetResponseHeader{}, map[string]string{"offset": "1.5"}, ErrInvalidField, "offset"},
		{"create topic bad perm", &CreateTopicRequestHeader{}, map[string]string{"topic": "T", "defaultTopic": "", "readQueueNums": "1",
			"writeQueueNums": "1", "perm": "16", "topicFilterType": "SINGLE_TAG"}, ErrInvalidField, "perm"},
		{"create topic negative queues", &CreateTopicRequestHeader{}, map[string]string{"topic": "T", "defaultTopic": "", "readQueueNums": "-1",
			"writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG"}, ErrInvalidField, "readQueueNums"},
		{"create topic bad filter", &CreateTopicRequestHeader{}, map[string]string{"topic": "T", "defaultTopic": "", "readQueueNums": "1",
			"writeQueueNums": "1", "perm": "6", "topicFilterType": "ANY"}, ErrInvalidField, "topicFilterType"},
		{"create topic bad attributes", &CreateTopicRequestHeader{}, map[string]string{"topic": "T", "defaultTopic": "", "readQueueNums": "1",
			"writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG", "attributes": "message.type=FIFO"}, ErrInvalidField, "attributes"},
		{"send back missing group", &ConsumerSendMsgBackRequestHeader{}, map[string]string{"offset": "1", "delayLevel": "0"}, ErrMissingField, "group"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.h.DecodeFields(tc.ext)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("err = %v, want field %q", err, tc.field)
			}
			if !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), "Header") {
				t.Fatalf("message %q", err)
			}
		})
	}
}

func TestSendHeaderPrefersLongNames(t *testing.T) {
	ext := maps.Clone(exampleExt)
	ext["b"] = "other"
	var h SendMessageRequestHeader
	if err := h.DecodeFields(ext); err != nil || h.Topic != "TopicA" {
		t.Fatalf("%v %q", err, h.Topic)
	}
	var v2 SendMessageRequestHeaderV2
	if err := v2.DecodeFields(ext); err != nil || v2.Topic != "TopicA" {
		t.Fatalf("%v %q", err, v2.Topic)
	}
}

func TestTopicAttributes(t *testing.T) {
	good := map[string][]TopicAttribute{
		"":                               {},
		"+message.type=FIFO":             {{Key: "message.type", Value: "FIFO"}},
		"+a=1,-b,+c=x y":                 {{Key: "a", Value: "1"}, {Key: "b", Delete: true}, {Key: "c", Value: "x y"}},
		"+queue.type=BatchCQ,-delete.me": {{Key: "queue.type", Value: "BatchCQ"}, {Key: "delete.me", Delete: true}},
	}
	for in, want := range good {
		got, err := ParseTopicAttributes(in)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
			t.Fatalf("%q: got %+v", in, got)
		}
		if FormatTopicAttributes(got) != in {
			t.Fatalf("%q: format gives %q", in, FormatTopicAttributes(got))
		}
	}
	for _, in := range []string{"a=1", "+a", "+=1", "+a=", "-", "-a=1", "+a=1,+a=2", "+a=1,", ",", "+a=b=c"} {
		if _, err := ParseTopicAttributes(in); err == nil {
			t.Errorf("%q: want error", in)
		}
	}
}
