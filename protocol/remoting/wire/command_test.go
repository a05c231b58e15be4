package wire

import (
	"strings"
	"testing"
)

func TestFlags(t *testing.T) {
	cases := []struct {
		flag             int32
		response, oneway bool
	}{
		{0, false, false},
		{FlagResponse, true, false},
		{FlagOneway, false, true},
		{FlagResponse | FlagOneway, true, true},
		{-1, true, true},
		{4, false, false},
	}
	for _, tc := range cases {
		c := &Command{Flag: tc.flag}
		if c.IsResponse() != tc.response || c.IsOneway() != tc.oneway {
			t.Errorf("flag %d: response=%v oneway=%v", tc.flag, c.IsResponse(), c.IsOneway())
		}
	}
}

func TestNewRequestResponse(t *testing.T) {
	req := NewRequest(GetRouteInfoByTopic, map[string]string{"topic": "T"})
	if req.Code != 105 || req.IsResponse() || req.Language != LanguageGo || req.Version != DefaultVersion || req.Opaque != 0 {
		t.Fatalf("%+v", req)
	}
	req.Opaque = 77
	req.SerializeType = RocketMQ
	resp := NewResponse(req, TopicNotExist, "no route")
	if resp.Opaque != 77 || !resp.IsResponse() || resp.IsOneway() || resp.Code != 17 || resp.Remark != "no route" || resp.SerializeType != RocketMQ {
		t.Fatalf("%+v", resp)
	}
	resp.SetExt("k", "v")
	if resp.ExtFields["k"] != "v" {
		t.Fatal("SetExt")
	}
	if s := resp.String(); !strings.Contains(s, "TOPIC_NOT_EXIST") || !strings.Contains(s, "opaque=77") {
		t.Fatal(s)
	}
	if s := req.String(); !strings.Contains(s, "GET_ROUTEINFO_BY_TOPIC") {
		t.Fatal(s)
	}
}

func TestCodeNames(t *testing.T) {
	cases := []struct {
		got, want string
	}{
		{SendMessage.String(), "SEND_MESSAGE"},
		{SendMessageV2.String(), "SEND_MESSAGE_V2"},
		{SendBatchMessage.String(), "SEND_BATCH_MESSAGE"},
		{HeartBeat.String(), "HEART_BEAT"},
		{GetRouteInfoByTopic.String(), "GET_ROUTEINFO_BY_TOPIC"},
		{PopMessage.String(), "POP_MESSAGE"},
		{RequestCode(200050).String(), "RequestCode(200050)"},
		{RequestCode(200050).Canonical().String(), "POP_MESSAGE"},
		{RequestCode(200151).Canonical().String(), "BATCH_ACK_MESSAGE"},
		{Success.String(), "SUCCESS"},
		{QueryNotFound.String(), "QUERY_NOT_FOUND"},
		{ResponseCode(9999).String(), "ResponseCode(9999)"},
		{LanguageGo.String(), "GO"},
		{LanguageNodeJS.String(), "NODE_JS"},
		{LanguageCode(99).String(), "LanguageCode(99)"},
		{RocketMQ.String(), "ROCKETMQ"},
		{SerializeType(5).String(), "SerializeType(5)"},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	if SendMessage.Canonical() != SendMessage {
		t.Error("Canonical changed a 16-bit code")
	}
	// Codes the Go client and the Java broker use.
	want := map[RequestCode]int32{
		SendMessage: 10, PullMessage: 11, QueryMessage: 12, QueryConsumerOffset: 14, UpdateConsumerOffset: 15,
		UpdateAndCreateTopic: 17, GetAllTopicConfig: 21, SearchOffsetByTimestamp: 29, GetMaxOffset: 30,
		GetMinOffset: 31, ViewMessageByID: 33, HeartBeat: 34, UnregisterClient: 35, ConsumerSendMsgBack: 36,
		EndTransaction: 37, GetConsumerListByGroup: 38, CheckTransactionState: 39, NotifyConsumerIdsChanged: 40,
		LockBatchMQ: 41, UnlockBatchMQ: 42, RegisterBroker: 103, UnregisterBroker: 104, GetRouteInfoByTopic: 105,
		GetBrokerClusterInfo: 106, UpdateAndCreateSubscriptionGroup: 200, GetAllSubscriptionGroupConfig: 201,
		GetAllTopicListFromNameServer: 206, DeleteSubscriptionGroup: 207, DeleteTopicInBroker: 215,
		DeleteTopicInNamesrv: 216, ResetConsumerClientOffset: 220, GetConsumerStatusFromClient: 221,
		GetConsumerRunningInfo: 307, ConsumeMessageDirectly: 309, SendMessageV2: 310, SendBatchMessage: 320,
		SendReplyMessage: 324, SendReplyMessageV2: 325, PushReplyMessageToClient: 326, LitePullMessage: 361,
		QueryAssignment: 400, CheckClientConfig: 46,
	}
	for c, n := range want {
		if int32(c) != n {
			t.Errorf("%v = %d, want %d", c, int32(c), n)
		}
	}
	for c := range requestCodeNames {
		if c != c.Canonical() {
			t.Errorf("%v does not fit 16 bits", c)
		}
	}
}

func TestParseLanguage(t *testing.T) {
	for i := range languageNames {
		l := LanguageCode(i)
		got, ok := ParseLanguage(strings.ToLower(l.String()))
		if !ok || got != l {
			t.Errorf("%v: got %v %v", l, got, ok)
		}
	}
	if l, ok := ParseLanguage("KOTLIN"); ok || l != LanguageOther {
		t.Error("unknown language")
	}
}
