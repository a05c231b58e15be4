package admin

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

func TestParseTime(t *testing.T) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
		err  string
	}{
		{in: "now", want: now},
		{in: "NOW", want: now},
		{in: "-1h", want: now.Add(-time.Hour)},
		{in: "-1h30m", want: now.Add(-90 * time.Minute)},
		{in: "+10m", want: now.Add(10 * time.Minute)},
		{in: "-2d", want: now.Add(-48 * time.Hour)},
		{in: " -5s ", want: now.Add(-5 * time.Second)},
		{in: "1700000000000", want: time.UnixMilli(1700000000000)},
		{in: "0", want: time.UnixMilli(0)},
		{in: "2024-04-30T10:00:00Z", want: time.Date(2024, 4, 30, 10, 0, 0, 0, time.UTC)},
		{in: "2024-04-30T10:00:00.250+02:00", want: time.Date(2024, 4, 30, 8, 0, 0, 250e6, time.UTC)},
		{in: "2024-04-30T10:00:00", want: time.Date(2024, 4, 30, 10, 0, 0, 0, time.UTC)},
		{in: "2024-04-30", want: time.Date(2024, 4, 30, 0, 0, 0, 0, time.UTC)},
		{in: "", err: "empty time"},
		{in: "-5", err: "relative times"},
		{in: "-", err: "relative times"},
		{in: "--1h", err: "relative times"},
		{in: "-1x", err: "relative times"},
		{in: "yesterday", err: "RFC 3339"},
		{in: "99999999999999999999", err: "out of range"},
	}
	for _, tt := range tests {
		got, err := ParseTime(tt.in, now)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("ParseTime(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || !got.Equal(tt.want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestNormalizeKeys(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{}`, `{}`},
		{` { "a" : 1 , "b":[1, 2] } `, `{"a":1,"b":[1,2]}`},
		{`{0:"127.0.0.1:10911",1:"127.0.0.2:10911"}`, `{"0":"127.0.0.1:10911","1":"127.0.0.2:10911"}`},
		{`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:5}}`,
			`{"offsetTable":{"{\"brokerName\":\"b\",\"queueId\":0,\"topic\":\"T\"}":5}}`},
		{`{{"a":{1:2}}:{3:4}}`, `{"{\"a\":{\"1\":2}}":{"3":4}}`},
		{`["{x}", "a\"b}", {"k":"v"}]`, `["{x}","a\"b}",{"k":"v"}]`},
		{`{true:null}`, `{"true":null}`},
		{`"s"`, `"s"`},
		{`-1.5e3`, `-1.5e3`},
	}
	for _, tt := range tests {
		got, err := normalizeKeys([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("normalizeKeys(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
		if err == nil && !json.Valid(got) {
			t.Errorf("normalizeKeys(%s) = %s: not JSON", tt.in, got)
		}
	}
	for _, bad := range []string{``, `{`, `{"a"}`, `{"a":1,}`, `[1 2]`, `"open`, `{"a":1}x`, `{nope:1}`, `}`, strings.Repeat("[", 100) + strings.Repeat("]", 100)} {
		if got, err := normalizeKeys([]byte(bad)); err == nil {
			t.Errorf("normalizeKeys(%q) = %s, want an error", bad, got)
		}
	}
}

func TestQueueTable(t *testing.T) {
	want := map[wire.MessageQueue]int64{
		{Topic: "T", BrokerName: "b", QueueID: 0}: 5,
		{Topic: "T", BrokerName: "b", QueueID: 1}: 7,
	}
	forms := map[string]string{
		"fastjson":    `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:5,{"brokerName":"b","queueId":1,"topic":"T"}:7}}`,
		"string keys": `{"offsetTable":{"{\"topic\":\"T\",\"brokerName\":\"b\",\"queueId\":0}":5,"{\"topic\":\"T\",\"brokerName\":\"b\",\"queueId\":1}":7}}`,
		"pairs":       `{"offsetTable":[[{"topic":"T","brokerName":"b","queueId":0},5],[{"topic":"T","brokerName":"b","queueId":1},7]]}`,
	}
	for name, body := range forms {
		var got struct {
			OffsetTable queueTable[int64] `json:"offsetTable"`
		}
		if err := decodeBody(target{role: "broker", addr: "x"}, wire.InvokeBrokerToResetOffset, []byte(body), &got); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(got.OffsetTable) != len(want) {
			t.Errorf("%s: got %v, want %v", name, got.OffsetTable, want)
		}
		for q, v := range want {
			if got.OffsetTable[q] != v {
				t.Errorf("%s: %v = %d, want %d", name, q, got.OffsetTable[q], v)
			}
		}
	}
	var bad struct {
		OffsetTable queueTable[int64] `json:"offsetTable"`
	}
	for _, body := range []string{`{"offsetTable":[[1]]}`, `{"offsetTable":{"nope":1}}`, `{"offsetTable":[["{\"queueId\":\"x\"}",1]]}`} {
		if err := decodeBody(target{role: "broker", addr: "x"}, wire.GetConsumeStats, []byte(body), &bad); err == nil {
			t.Errorf("%s decoded", body)
		}
	}
}

func TestPermAndType(t *testing.T) {
	for in, want := range map[string]int32{"rw": 6, "RW": 6, "wr": 6, "r": 4, "w": 2} {
		if got, err := ParsePerm(in); err != nil || got != want {
			t.Errorf("ParsePerm(%q) = %d, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "x", "rwx", "6"} {
		if _, err := ParsePerm(bad); err == nil {
			t.Errorf("ParsePerm(%q) accepted", bad)
		}
	}
	for p, want := range map[int32]string{0: "-", 2: "w", 4: "r", 6: "rw", 7: "rwx"} {
		if got := FormatPerm(p); got != want {
			t.Errorf("FormatPerm(%d) = %q, want %q", p, got, want)
		}
	}
	if got, err := ParseMessageType("fifo"); err != nil || got != "FIFO" {
		t.Errorf("ParseMessageType(fifo) = %q, %v", got, err)
	}
	if _, err := ParseMessageType("ORDERED"); err == nil || !strings.Contains(err.Error(), "NORMAL, FIFO, DELAY, TRANSACTION, MIXED") {
		t.Errorf("ParseMessageType(ORDERED): %v", err)
	}
}

func TestParseAddrs(t *testing.T) {
	got, err := ParseAddrs(" 10.0.0.1:9876;10.0.0.2:9876, localhost:9876 ,")
	if err != nil || strings.Join(got, "|") != "10.0.0.1:9876|10.0.0.2:9876|localhost:9876" {
		t.Errorf("ParseAddrs = %q, %v", got, err)
	}
	for _, bad := range []string{"", " , ", "9876", "host", ":9876", "host:"} {
		if _, err := ParseAddrs(bad); err == nil {
			t.Errorf("ParseAddrs(%q) accepted", bad)
		}
	}
	if _, err := New(Options{}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("New without name servers: %v", err)
	}
}

func TestIsSystem(t *testing.T) {
	names := map[string]bool{"DefaultCluster": true, "broker-a": true}
	for topic, want := range map[string]bool{
		"orders": false, "TBW102": true, "%RETRY%g": true, "%DLQ%g": true, "rmq_sys_x": true,
		"SCHEDULE_TOPIC_XXXX": true, "DefaultCluster": true, "broker-a": true, "DefaultCluster_REPLY_TOPIC": true,
	} {
		if got := IsSystemTopic(topic, names); got != want {
			t.Errorf("IsSystemTopic(%q) = %v", topic, got)
		}
	}
	for group, want := range map[string]bool{"billing": false, "TOOLS_CONSUMER": true, "CID_RMQ_SYS_TRANS": true} {
		if got := IsSystemGroup(group); got != want {
			t.Errorf("IsSystemGroup(%q) = %v", group, got)
		}
	}
}

func TestResponseError(t *testing.T) {
	err := error(&ResponseError{Target: "broker broker-a (127.0.0.1:10911)", Request: wire.UpdateAndCreateTopic, Code: wire.NoPermission, Remark: "read only"})
	if got, want := err.Error(), "broker broker-a (127.0.0.1:10911) answered UPDATE_AND_CREATE_TOPIC with NO_PERMISSION (16): read only"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !HasCode(err, wire.SystemError, wire.NoPermission) || HasCode(err, wire.SystemError) || HasCode(errors.New("x"), wire.NoPermission) {
		t.Error("HasCode")
	}
	for code, sentinel := range map[wire.ResponseCode]error{wire.TopicNotExist: ErrTopicNotFound, wire.SubscriptionGroupNotExist: ErrGroupNotFound, wire.QueryNotFound: ErrMessageNotFound} {
		if !errors.Is(&ResponseError{Code: code}, sentinel) {
			t.Errorf("%v does not match %v", code, sentinel)
		}
	}
}

func TestResendHeaders(t *testing.T) {
	req := wire.NewRequest(wire.KarmanResendDeadLetter, nil)
	req.EncodeHeader(&wire.ResendDeadLetterRequestHeader{Group: "g", MsgID: "id"})
	var h wire.ResendDeadLetterRequestHeader
	if err := req.DecodeHeader(&h); err != nil || h.Group != "g" || h.MsgID != "id" {
		t.Errorf("request header round trip: %+v, %v", h, err)
	}
	if err := (&wire.ResendDeadLetterRequestHeader{}).DecodeFields(map[string]string{"group": "g"}); !errors.Is(err, wire.ErrMissingField) {
		t.Errorf("missing msgId: %v", err)
	}
	want := wire.ResendDeadLetterResponseHeader{Topic: "T", MsgID: "u", OffsetMsgID: "o", QueueID: 3, QueueOffset: 42}
	ext := map[string]string{}
	want.EncodeFields(ext)
	var got wire.ResendDeadLetterResponseHeader
	if err := got.DecodeFields(ext); err != nil || got != want {
		t.Errorf("response header round trip: %+v, %v", got, err)
	}
	ext["queueOffset"] = "x"
	if err := got.DecodeFields(ext); !errors.Is(err, wire.ErrInvalidField) {
		t.Errorf("bad queueOffset: %v", err)
	}
	if wire.KarmanResendDeadLetter > 32767 {
		t.Error("the code does not fit a binary header")
	}
}

func TestPickQueue(t *testing.T) {
	a := pickQueue(map[string]string{"__SHARDINGKEY": "order-1", "UNIQ_KEY": "x"}, 8)
	b := pickQueue(map[string]string{"__SHARDINGKEY": "order-1", "UNIQ_KEY": "y"}, 8)
	if a != b || a < 0 || a >= 8 {
		t.Errorf("same message group, queues %d and %d", a, b)
	}
	if q := pickQueue(map[string]string{"UNIQ_KEY": "x"}, 1); q != 0 {
		t.Errorf("one queue: %d", q)
	}
}
