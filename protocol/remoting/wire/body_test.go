package wire

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// goHeartbeat is the heartbeat body shape from the protocol reference.
const goHeartbeat = `{"clientID":"10.0.0.5@12345#1700000000000000000",
 "producerDataSet":[{"groupName":"pg"}],
 "consumerDataSet":[{"groupName":"cg",
    "consumeType":"CONSUME_PASSIVELY",
    "messageModel":"CLUSTERING",
    "consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",
    "subscriptionDataSet":[
      {"classFilterMode":false,"topic":"TopicA","subString":"tagA || tagB",
       "tagsSet":["tagA","tagB"],"codeSet":["3552617", "3552618"],
       "subVersion":1700000000000000000,"expressionType":"TAG"},
      {"classFilterMode":false,"topic":"%RETRY%cg","subString":"*",
       "tagsSet":[],"codeSet":[],"subVersion":1700000000000000001,"expressionType":"TAG"}],
    "unitMode":false}]}`

func TestHeartbeatBody(t *testing.T) {
	var h HeartbeatData
	if err := DecodeJSONBody([]byte(goHeartbeat), &h); err != nil {
		t.Fatal(err)
	}
	want := HeartbeatData{
		ClientID:        "10.0.0.5@12345#1700000000000000000",
		ProducerDataSet: []ProducerData{{GroupName: "pg"}},
		ConsumerDataSet: []ConsumerData{{
			GroupName: "cg", ConsumeType: ConsumePassively, MessageModel: Clustering, ConsumeFromWhere: ConsumeFromLastOffset,
			SubscriptionDataSet: []SubscriptionData{
				{Topic: "TopicA", SubString: "tagA || tagB", TagsSet: []string{"tagA", "tagB"}, CodeSet: CodeSet{3552617, 3552618},
					SubVersion: 1700000000000000000, ExpressionType: ExpressionTag},
				{Topic: "%RETRY%cg", SubString: "*", TagsSet: []string{}, CodeSet: CodeSet{}, SubVersion: 1700000000000000001, ExpressionType: ExpressionTag},
			},
		}},
	}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("got  %+v\nwant %+v", h, want)
	}
	if TagHashCode("tagA") != 3552231 { // Java "tagA".hashCode()
		t.Fatalf("TagHashCode = %d", TagHashCode("tagA"))
	}
	enc, err := EncodeJSONBody(h)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(enc, []byte(`"clientID":"10.0.0.5@`)) || !bytes.Contains(enc, []byte(`"codeSet":["3552617","3552618"]`)) {
		t.Fatalf("encoding %s", enc)
	}
	var again HeartbeatData
	if err := DecodeJSONBody(enc, &again); err != nil || !reflect.DeepEqual(again, want) {
		t.Fatalf("round trip: %v %+v", err, again)
	}
}

func TestHeartbeatJavaShape(t *testing.T) {
	// Java sends codeSet as numbers and may spell the key clientId.
	java := `{"clientId":"j@1","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","codeSet":[-5,7],"tagsSet":["x"]}]}],"producerDataSet":[],"heartbeatFingerprint":42,"withoutSub":false}`
	var h HeartbeatData
	if err := DecodeJSONBody([]byte(java), &h); err != nil {
		t.Fatal(err)
	}
	if h.ClientID != "j@1" || h.HeartbeatFingerprint != 42 || !reflect.DeepEqual(h.ConsumerDataSet[0].SubscriptionDataSet[0].CodeSet, CodeSet{-5, 7}) {
		t.Fatalf("%+v", h)
	}
	for _, bad := range []string{`{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":["x"]}]}]}`,
		`{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":[99999999999]}]}]}`, `{"clientID":`} {
		if err := DecodeJSONBody([]byte(bad), &h); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v", bad, err)
		}
	}
}

func TestEmptyBodiesUseArrays(t *testing.T) {
	cases := []struct {
		v    any
		want string
	}{
		{HeartbeatData{ClientID: "c"}, `{"clientID":"c","producerDataSet":[],"consumerDataSet":[]}`},
		{ConsumerData{GroupName: "g"}, `{"groupName":"g","consumeType":"","messageModel":"","consumeFromWhere":"","subscriptionDataSet":[],"unitMode":false}`},
		{SubscriptionData{Topic: "T"}, `{"classFilterMode":false,"topic":"T","subString":"","tagsSet":[],"codeSet":[],"subVersion":0,"expressionType":""}`},
		{LockBatchRequestBody{ConsumerGroup: "g", ClientID: "c"}, `{"consumerGroup":"g","clientId":"c","onlyThisBroker":false,"mqSet":[]}`},
		{LockBatchResponseBody{}, `{"lockOKMQSet":[]}`},
		{ConsumerListResponseBody{}, `{"consumerIdList":[]}`},
		{TopicListBody{}, `{"topicList":[]}`},
		{TopicRouteData{}, `{"queueDatas":[],"brokerDatas":[],"filterServerTable":{}}`},
	}
	for _, tc := range cases {
		got, err := EncodeJSONBody(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%T:\n got %s\nwant %s", tc.v, got, tc.want)
		}
	}
}

func TestLockAndConsumerListBodies(t *testing.T) {
	req := `{"consumerGroup":"cg","clientId":"10.0.0.5@1","mqSet":[{"topic":"T","brokerName":"broker-a","queueId":0},{"topic":"T","brokerName":"broker-a","queueId":1}]}`
	var lb LockBatchRequestBody
	if err := DecodeJSONBody([]byte(req), &lb); err != nil {
		t.Fatal(err)
	}
	if lb.ClientID != "10.0.0.5@1" || len(lb.MQSet) != 2 || lb.MQSet[1] != (MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 1}) {
		t.Fatalf("%+v", lb)
	}
	out, _ := EncodeJSONBody(LockBatchResponseBody{LockOKMQSet: lb.MQSet[:1]})
	if string(out) != `{"lockOKMQSet":[{"topic":"T","brokerName":"broker-a","queueId":0}]}` {
		t.Fatal(string(out))
	}
	out, _ = EncodeJSONBody(ConsumerListResponseBody{ConsumerIDList: []string{"a", "b"}})
	if string(out) != `{"consumerIdList":["a","b"]}` {
		t.Fatal(string(out))
	}
}

func TestTopicRouteData(t *testing.T) {
	route := &TopicRouteData{
		QueueDatas: []QueueData{{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
		BrokerDatas: []BrokerData{{Cluster: "DefaultCluster", BrokerName: "broker-a",
			BrokerAddrs: BrokerAddrs{10: "192.168.0.12:10911", 1: "192.168.0.11:10911", 0: "192.168.0.10:10911"}},
			{Cluster: "DefaultCluster", BrokerName: "broker-b"}},
	}
	enc, err := route.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"queueDatas":[{"brokerName":"broker-a","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0}],` +
		`"brokerDatas":[{"cluster":"DefaultCluster","brokerName":"broker-a","brokerAddrs":{"0":"192.168.0.10:10911","1":"192.168.0.11:10911","10":"192.168.0.12:10911"},"enableActingMaster":false},` +
		`{"cluster":"DefaultCluster","brokerName":"broker-b","brokerAddrs":{},"enableActingMaster":false}],"filterServerTable":{}}`
	if string(enc) != want {
		t.Fatalf("got\n%s\nwant\n%s", enc, want)
	}
	// The Go client's own parse of brokerAddrs: drop the braces, split on
	// ',', split each part at the first ':', strip quotes.
	raw := enc[bytes.Index(enc, []byte(`"brokerAddrs":`))+len(`"brokerAddrs":`):]
	raw = raw[:bytes.IndexByte(raw, '}')+1]
	addrs := map[string]string{}
	for _, part := range strings.Split(string(raw[1:len(raw)-1]), ",") {
		k, v, _ := strings.Cut(part, ":")
		addrs[strings.ReplaceAll(k, `"`, "")] = strings.ReplaceAll(v, `"`, "")
	}
	if addrs["0"] != "192.168.0.10:10911" || addrs["10"] != "192.168.0.12:10911" {
		t.Fatalf("client-style parse: %v", addrs)
	}
	back, err := DecodeTopicRouteData(enc)
	if err != nil {
		t.Fatal(err)
	}
	if back.BrokerDatas[0].BrokerAddrs[MasterID] != "192.168.0.10:10911" || len(back.BrokerDatas[1].BrokerAddrs) != 0 {
		t.Fatalf("%+v", back)
	}
	// Indented output would break the Go client; MarshalIndent re-indents
	// the whole body, so never use it, but plain Marshal of a BrokerData
	// stays compact.
	bd, _ := json.Marshal(route.BrokerDatas[0])
	if bytes.ContainsAny(bd, " \n") {
		t.Fatalf("not compact: %s", bd)
	}
}

func TestTopicRouteDataFastjson(t *testing.T) {
	// A Java name server answering an old client writes bare numeric keys.
	body := `{"orderTopicConf":"broker-a:4","queueDatas":[{"brokerName":"broker-a","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0}],` +
		`"brokerDatas":[{"brokerAddrs":{0:"192.168.0.10:10911", 1 :"192.168.0.11:10911"},"brokerName":"broker-a","cluster":"c","enableActingMaster":false,"zoneName":"z"}],` +
		`"filterServerTable":{},"remark":"{0:\"not a key\"}","topicQueueMappingByBroker":null}`
	r, err := DecodeTopicRouteData([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if r.OrderTopicConf != "broker-a:4" || r.BrokerDatas[0].BrokerAddrs[0] != "192.168.0.10:10911" ||
		r.BrokerDatas[0].BrokerAddrs[1] != "192.168.0.11:10911" || r.BrokerDatas[0].ZoneName != "z" {
		t.Fatalf("%+v", r)
	}
	if _, err := DecodeTopicRouteData([]byte(`{"queueDatas":`)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v", err)
	}
}

func TestBatchReferenceEntry(t *testing.T) {
	want, _ := hex.DecodeString("0000001f" + "00000000" + "00000000" + "00000000" + "00000002" + "6231" + "0007" + "54414753" + "01" + "74" + "02")
	entries, err := DecodeBatch(want)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || string(entries[0].Body) != "b1" || entries[0].Properties != "TAGS\x01t\x02" || entries[0].Flag != 0 {
		t.Fatalf("%+v", entries)
	}
	got, err := AppendBatch(nil, entries)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("AppendBatch: %v\n% x", err, got)
	}
}

func TestBatchGoClient(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("testdata", "goclient", "batch.bin"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := DecodeBatch(body)
	if err != nil {
		t.Fatal(err)
	}
	want := []BatchEntry{{Body: []byte("b1"), Properties: "TAGS\x01t\x02"}, {Body: []byte("second body"), Properties: "KEYS\x01k1 k2\x02"}}
	if !reflect.DeepEqual(entries, want) {
		t.Fatalf("%+v", entries)
	}
}

func TestBatchMalformed(t *testing.T) {
	good, _ := AppendBatch(nil, []BatchEntry{{Flag: 3, Body: []byte("abc"), Properties: "k\x01v\x02"}})
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := map[string][]byte{
		"truncated":          good[:len(good)-1],
		"short":              good[:10],
		"total too big":      mut(func(b []byte) []byte { b[3]++; return b }),
		"total too small":    mut(func(b []byte) []byte { b[3] = 5; return b }),
		"negative total":     mut(func(b []byte) []byte { b[0] = 0x80; return b }),
		"body length big":    mut(func(b []byte) []byte { b[19] = 200; return b }),
		"body length neg":    mut(func(b []byte) []byte { b[16] = 0xff; return b }),
		"props length wrong": mut(func(b []byte) []byte { b[24]++; return b }),
		"trailing bytes":     append(append([]byte(nil), good...), 0, 0),
	}
	for name, body := range cases {
		if _, err := DecodeBatch(body); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if e, err := DecodeBatch(nil); err != nil || len(e) != 0 {
		t.Fatal("empty batch")
	}
	// Empty body and properties are fine.
	b, _ := AppendBatch(nil, []BatchEntry{{}})
	if e, err := DecodeBatch(b); err != nil || len(e) != 1 || e[0].Body != nil {
		t.Fatalf("%v %+v", err, e)
	}
	if _, err := AppendBatch(nil, []BatchEntry{{Properties: strings.Repeat("x", MaxBatchPropertiesLength+1)}}); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("err = %v", err)
	}
}
