package namesrv

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// javaCompressed builds a compressed body part by part the way Java's
// RegisterBrokerBody.encode(true) lays it out, independently of Encode.
func javaCompressed(t testing.TB, dataVersion string, topics []string, filters string, mappings []string, withMappingCount bool) []byte {
	t.Helper()
	var raw bytes.Buffer
	part := func(s string) {
		binary.Write(&raw, binary.BigEndian, int32(len(s)))
		raw.WriteString(s)
	}
	part(dataVersion)
	binary.Write(&raw, binary.BigEndian, int32(len(topics)))
	for _, tp := range topics {
		part(tp)
	}
	part(filters)
	if withMappingCount {
		binary.Write(&raw, binary.BigEndian, int32(len(mappings)))
		for _, m := range mappings {
			part(m)
		}
	}
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	zw.Write(raw.Bytes())
	zw.Close()
	return z.Bytes()
}

// The JSON body of a Java 5 broker (fastjson field order, extra fields).
const javaJSON = `{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":7,"stateVersion":0,"timestamp":1700000000000},` +
	`"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1700000000000},"topicConfigTable":{` +
	`"TopicA":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicA","topicSysFlag":0,"writeQueueNums":4},` +
	`"TBW102":{"attributes":{},"order":false,"perm":7,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"TBW102","topicSysFlag":0,"writeQueueNums":8},` +
	`"%RETRY%g":{"order":false,"perm":6,"readQueueNums":1,"topicFilterType":"SINGLE_TAG","topicName":"%RETRY%g","topicSysFlag":0,"writeQueueNums":1}},` +
	`"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}`

func TestDecodeRegisterBrokerBody(t *testing.T) {
	dv := DataVersion{Timestamp: 1700000000000, Counter: 7}
	for _, tc := range []struct {
		name       string
		body       []byte
		compressed bool
		want       *RegisterBrokerBody
	}{
		{"empty", nil, false, &RegisterBrokerBody{}},
		{"empty compressed", nil, true, &RegisterBrokerBody{}},
		{"java json", []byte(javaJSON), false, &RegisterBrokerBody{
			DataVersion:      dv,
			FilterServerList: []string{},
			Topics: []TopicConfig{
				{TopicName: "%RETRY%g", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: FilterSingleTag},
				{TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7, TopicFilterType: FilterSingleTag, Attributes: map[string]string{}},
				{TopicName: "TopicA", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: FilterSingleTag, Attributes: map[string]string{}},
			},
		}},
		{"java compressed", javaCompressed(t, `{"counter":7,"stateVersion":0,"timestamp":1700000000000}`,
			[]string{`TopicA 4 4 6 SINGLE_TAG {"+message.type":"FIFO"}`, `TBW102 8 8 7 SINGLE_TAG {}`, `Old 1 1 6 MULTI_TAG`},
			`[]`, []string{`{"topic":"X","bname":"b"}`}, true), true,
			&RegisterBrokerBody{DataVersion: dv, FilterServerList: []string{}, Topics: []TopicConfig{
				{TopicName: "Old", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: FilterMultiTag},
				{TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7, TopicFilterType: FilterSingleTag, Attributes: map[string]string{}},
				{TopicName: "TopicA", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: FilterSingleTag, Attributes: map[string]string{"+message.type": "FIFO"}},
			}}},
		{"older compressed without mappings", javaCompressed(t, `{"counter":7,"timestamp":1700000000000}`,
			[]string{`T 2 2 6 SINGLE_TAG`}, `["10.0.0.1:1"]`, nil, false), true,
			&RegisterBrokerBody{DataVersion: dv, FilterServerList: []string{"10.0.0.1:1"}, Topics: []TopicConfig{
				{TopicName: "T", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6, TopicFilterType: FilterSingleTag},
			}}},
		{"compressed json entries, duplicates", javaCompressed(t, `{}`,
			[]string{`{"topicName":"T","readQueueNums":2,"writeQueueNums":2,"perm":6,"topicSysFlag":3}`, `T 4 4 6 SINGLE_TAG {not json}`}, `[]`, nil, true), true,
			&RegisterBrokerBody{FilterServerList: []string{}, Topics: []TopicConfig{
				{TopicName: "T", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: FilterSingleTag},
			}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeRegisterBrokerBody(tc.body, tc.compressed)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("decoded\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestDecodeRegisterBrokerBodyErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		body       []byte
		compressed bool
	}{
		{"json garbage", []byte("{"), false},
		{"json wrong type", []byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":[]}}`), false},
		{"not zlib", []byte("plain"), true},
		{"truncated zlib", javaCompressed(t, `{}`, []string{"T 1 1 6 SINGLE_TAG"}, `[]`, nil, true)[:12], true},
		{"bad data version", javaCompressed(t, `[`, nil, `[]`, nil, true), true},
		{"bad topic", javaCompressed(t, `{}`, []string{"T 1 x 6 SINGLE_TAG"}, `[]`, nil, true), true},
		{"short topic", javaCompressed(t, `{}`, []string{"T 1 1 6"}, `[]`, nil, true), true},
		{"empty topic name", javaCompressed(t, `{}`, []string{" 1 1 6 SINGLE_TAG"}, `[]`, nil, true), true},
		{"json topic without name", javaCompressed(t, `{}`, []string{`{"perm":6}`}, `[]`, nil, true), true},
		{"bad filter list", javaCompressed(t, `{}`, nil, `{`, nil, true), true},
		{"missing filter list", javaCompressed(t, `{}`, nil, ``, nil, false)[:0], true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodeRegisterBrokerBody(tc.body, tc.compressed); !errors.Is(err, wire.ErrMalformed) {
				if len(tc.body) == 0 && err == nil {
					return // an empty body is an empty registration
				}
				t.Errorf("err %v, want ErrMalformed", err)
			}
		})
	}
}

func TestRegisterBrokerBodyRoundTrip(t *testing.T) {
	in := &RegisterBrokerBody{
		DataVersion:      DataVersion{StateVersion: 2, Timestamp: 1700000000123, Counter: 9},
		FilterServerList: []string{},
		Topics: []TopicConfig{
			{TopicName: "A", ReadQueueNums: 8, WriteQueueNums: 4, Perm: 6, TopicFilterType: FilterSingleTag, TopicSysFlag: 1, Order: true, Attributes: map[string]string{"k": "v"}},
			{TopicName: "B", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 4, TopicFilterType: FilterMultiTag, Attributes: map[string]string{}},
		},
	}
	for _, compressed := range []bool{false, true} {
		b, err := in.Encode(compressed)
		if err != nil {
			t.Fatal(err)
		}
		out, err := DecodeRegisterBrokerBody(b, compressed)
		if err != nil {
			t.Fatal(err)
		}
		want := *in
		if compressed {
			want.Topics = slicesClone(in.Topics)
			want.Topics[0].TopicSysFlag, want.Topics[0].Order = 0, false
		}
		if !reflect.DeepEqual(out, &want) {
			t.Errorf("compressed=%v:\n%+v\nwant\n%+v", compressed, out, &want)
		}
	}
	if _, err := (&RegisterBrokerBody{Topics: []TopicConfig{{TopicName: "a b"}}}).Encode(true); err == nil {
		t.Error("a topic name with a space encoded compressed")
	}
	// JSON keys as Java writes them.
	b, _ := (&RegisterBrokerBody{Topics: []TopicConfig{{TopicName: "T", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}}}).Encode(false)
	want := `{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"topicName":"T","readQueueNums":1,"writeQueueNums":1,"perm":6,` +
		`"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false,"attributes":{}}},"dataVersion":{"stateVersion":0,"timestamp":0,"counter":0}},"filterServerList":[]}`
	if string(b) != want {
		t.Errorf("JSON body\n%s\nwant\n%s", b, want)
	}
}

func TestBodyCRC32(t *testing.T) {
	// Java: (int) (CRC32.getValue() & 0x7FFFFFFF).
	for body, want := range map[string]int32{"": 0, "a": 0xe8b7be43 & 0x7fffffff, "123456789": 0x4bf43926 & 0x7fffffff} {
		if got := BodyCRC32([]byte(body)); got != want {
			t.Errorf("crc(%q) = %#x, want %#x", body, got, want)
		}
	}
}

func FuzzDecodeRegisterBrokerBody(f *testing.F) {
	f.Add([]byte(javaJSON), false)
	f.Add(javaCompressed(f, `{"counter":1}`, []string{`T 4 4 6 SINGLE_TAG {}`}, `[]`, []string{`{}`}, true), true)
	f.Add(javaCompressed(f, `{}`, []string{`{"topicName":"T"}`}, `[]`, nil, false), true)
	f.Fuzz(func(t *testing.T, body []byte, compressed bool) {
		b, err := DecodeRegisterBrokerBody(body, compressed)
		if err != nil {
			if !errors.Is(err, wire.ErrMalformed) {
				t.Fatalf("error %v does not match ErrMalformed", err)
			}
			return
		}
		for i, tc := range b.Topics {
			if i > 0 && b.Topics[i-1].TopicName >= tc.TopicName {
				t.Fatalf("topics not sorted and unique: %+v", b.Topics)
			}
		}
	})
}
