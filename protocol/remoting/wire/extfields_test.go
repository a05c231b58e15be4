package wire

import (
	"bytes"
	"errors"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

// decodeBoth decodes data with and without DeferExtFields.
func decodeBoth(data []byte, strict bool) (eager, deferred *Command, eerr, derr error) {
	eager, eerr = DecodeOptions{StrictExtFields: strict}.Decode(data)
	deferred, derr = DecodeOptions{StrictExtFields: strict, DeferExtFields: true}.Decode(data)
	return
}

// checkDeferred checks that deferring extFields changes nothing a caller
// can see: the same errors, the same extFields once loaded, and the same
// typed headers read in place as from the map.
func checkDeferred(t *testing.T, data []byte) {
	t.Helper()
	for _, strict := range []bool{false, true} {
		eager, deferred, eerr, derr := decodeBoth(data, strict)
		if (eerr == nil) != (derr == nil) {
			t.Fatalf("strict=%v: eager error %v, deferred error %v", strict, eerr, derr)
		}
		if eerr != nil {
			if !isWireError(derr) {
				t.Fatalf("untyped error %T: %v", derr, derr)
			}
			continue
		}
		for _, h := range []struct{ eager, deferred Header }{
			{new(SendMessageRequestHeader), new(SendMessageRequestHeader)},
			{new(PullMessageRequestHeader), new(PullMessageRequestHeader)},
			{new(QueryConsumerOffsetRequestHeader), new(QueryConsumerOffsetRequestHeader)},
			{new(SendMessageResponseHeader), new(SendMessageResponseHeader)},
			{new(PullMessageResponseHeader), new(PullMessageResponseHeader)},
		} {
			again, _ := DecodeOptions{StrictExtFields: strict, DeferExtFields: true}.Decode(data)
			e1 := eager.DecodeHeader(h.eager)
			e2 := again.DecodeHeader(h.deferred)
			if (e1 == nil) != (e2 == nil) || (e1 != nil && e1.Error() != e2.Error()) {
				t.Fatalf("strict=%v %T: map error %v, in-place error %v", strict, h.eager, e1, e2)
			}
			if e1 != nil && !errors.Is(e2, ErrMissingField) && !errors.Is(e2, ErrInvalidField) {
				t.Fatalf("untyped header error %T: %v", e2, e2)
			}
			if !reflect.DeepEqual(h.eager, h.deferred) {
				t.Fatalf("strict=%v: header read in place\n%+v\nfrom the map\n%+v", strict, h.deferred, h.eager)
			}
		}
		checkDecodeSendHeader(t, eager, data, strict)
		deferred.LoadExtFields()
		if !sameCommand(eager, deferred) {
			t.Fatalf("strict=%v: loaded\n%+v\nwant\n%+v", strict, deferred, eager)
		}
		deferred.LoadExtFields() // again: nothing changes
		if !sameCommand(eager, deferred) {
			t.Fatal("second LoadExtFields changed the command")
		}
	}
}

// checkDecodeSendHeader checks that DecodeSendHeader reads what
// DecodeHeader reads, with the properties appended to the given bytes,
// from deferred extFields and from the map.
func checkDecodeSendHeader(t *testing.T, eager *Command, data []byte, strict bool) {
	t.Helper()
	var want SendMessageRequestHeader
	werr := eager.DecodeHeader(&want)
	wantProps := want.Properties
	want.Properties = ""
	deferred, _ := DecodeOptions{StrictExtFields: strict, DeferExtFields: true}.Decode(data)
	for _, c := range []*Command{deferred, eager} {
		for range 2 { // the second time with the scratch memory of the first
			var h SendMessageRequestHeader
			props, err := c.DecodeSendHeader(&h, []byte("p:"))
			if (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
				t.Fatalf("strict=%v: DecodeSendHeader error %v, DecodeHeader error %v", strict, err, werr)
			}
			if !reflect.DeepEqual(h, want) || string(props) != "p:"+wantProps {
				t.Fatalf("strict=%v: DecodeSendHeader read\n%+v %q\nDecodeHeader\n%+v %q", strict, h, props, want, wantProps)
			}
		}
	}
}

func goClientFrame(t testing.TB, name string) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", "goclient", name))
	if err != nil {
		t.Fatal(err)
	}
	return b[4:] // without the length prefix
}

func TestDeferredExtFields(t *testing.T) {
	for _, name := range []string{"send.bin", "pull.bin", "pull_binary.bin", "heartbeat.bin", "response.bin"} {
		t.Run(name, func(t *testing.T) { checkDeferred(t, goClientFrame(t, name)) })
	}
	for _, h := range []string{
		exampleHeader,
		`{"code":10,"extFields":null}`,
		`{"code":10,"extFields":{}}`,
		`{"code":10,"extFields":{"topic":"a","topic":"b","queueId":"1","queueId":null}}`,
		`{"code":10,"extFields":{"a":"g","producerGroup":"pg","b":"t","e":"3","queueId":"x"}}`,
		`{"code":10,"extFields":{"topic":"a"},"extFields":{"queueId":"2"}}`,
		`{"code":11,"extFields":{"queueId":+1,"sysFlag":"-2147483648","queueOffset":"9223372036854775807","maxMsgNums":"2147483648"}}`,
		`{"code":11,"extFields":{"consumerGroup":"\u0067","topic":"t\ud800","maxMsgBytes":"","batch":"TRUE","unitMode":"no"}}`,
		`{"code":10,"extFields":{"k":"\u00"}}`,
		`{"code":10,"extFields":{"k":7,"n":true,"m":false}}`,
		`{"code":10,"extFields":{"producerGroup":"g\u0001","topic":"t\u00e9","properties":"a\u0001b\u0002\ud800","i":"x\u0001y","queueId":"1"}}`,
		"{\"code\":10,\"extFields\":{\"properties\":\"\xff\xfe\\u0001\xff\",\"topic\":\"\\u0041\xff\"}}",
	} {
		checkDeferred(t, rawFrame(JSON, h, ""))
	}
}

func TestDeferredSendHeader(t *testing.T) {
	c, err := DecodeOptions{DeferExtFields: true}.Decode(goClientFrame(t, "send.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if c.ExtFields != nil {
		t.Fatalf("extFields decoded: %v", c.ExtFields)
	}
	var h SendMessageRequestHeader
	if err := c.DecodeHeader(&h); err != nil {
		t.Fatal(err)
	}
	if h.Topic == "" || h.ProducerGroup == "" || c.ExtFields != nil {
		t.Fatalf("%+v, extFields %v", h, c.ExtFields)
	}
}

// FuzzDeferredExtFields checks, for any frame, that decoding with
// DeferExtFields fails exactly when decoding at once does, and that the
// headers of sends and pulls read in place equal those read from the map.
func FuzzDeferredExtFields(f *testing.F) {
	for _, name := range []string{"send.bin", "pull.bin", "heartbeat.bin", "response.bin"} {
		f.Add(goClientFrame(f, name))
	}
	f.Add(rawFrame(JSON, exampleHeader, "hello"))
	f.Add(rawFrame(JSON, `{"code":11,"extFields":{"queueId":"1","queueId":null,"topic":"\u0041"}}`, ""))
	f.Add(rawFrame(JSON, `{"code":0,"flag":1,"extFields":{"msgId":"7F00","queueId":"1","queueOffset":"5","nextBeginOffset":"9","minOffset":"0","maxOffset":"12","suggestWhichBrokerId":"0"}}`, ""))
	f.Fuzz(func(t *testing.T, data []byte) { checkDeferred(t, data) })
}

// TestSetHeader checks that fields set with SetHeader encode exactly as
// the same fields set with EncodeHeader, in both header types, and that
// reading them back works.
func TestSetHeader(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	str := func() string {
		const chars = "aZ09\\\"\x01\x02\u00e9 _-"
		b := make([]byte, rnd.IntN(12))
		for i := range b {
			b[i] = chars[rnd.IntN(len(chars))]
		}
		if rnd.IntN(3) == 0 {
			return ""
		}
		return string(b)
	}
	num := func() int64 { return rnd.Int64N(1<<40) - 1<<39 }
	sendRequest := func() *SendMessageRequestHeader {
		h := &SendMessageRequestHeader{ProducerGroup: "g" + str(), Topic: "t" + str(), DefaultTopic: str(),
			DefaultTopicQueueNums: int32(num()), QueueID: int32(num()), SysFlag: int32(num()), BornTimestamp: num(),
			Flag: int32(num()), Properties: str(), ReconsumeTimes: int32(num()), UnitMode: rnd.IntN(2) == 0,
			Batch: rnd.IntN(2) == 0, BrokerName: str()}
		if rnd.IntN(2) == 0 {
			h.MaxReconsumeTimes = new(int32(num()))
		}
		return h
	}
	for range 500 {
		for _, h := range []Header{
			&SendMessageResponseHeader{MsgID: str(), QueueID: int32(num()), QueueOffset: num(), TransactionID: str(), BatchUniqID: str(), MsgRegion: str(), TraceOn: str()},
			&PullMessageResponseHeader{SuggestWhichBrokerID: num(), NextBeginOffset: num(), MinOffset: num(), MaxOffset: num()},
			sendRequest(),
			&SendMessageRequestHeaderV2{*sendRequest()},
		} {
			for _, typ := range []SerializeType{JSON, RocketMQ} {
				eager := &Command{Code: 0, Flag: FlagResponse, Opaque: 7, Body: []byte("b")}
				eager.EncodeHeader(h)
				lazy := &Command{Code: 0, Flag: FlagResponse, Opaque: 7, Body: []byte("b")}
				lazy.SetHeader(h)
				if lazy.ExtFields != nil {
					t.Fatal("SetHeader built the map")
				}
				want, err1 := eager.AppendTo(nil, typ)
				got, err2 := lazy.AppendTo(nil, typ)
				if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
					t.Fatalf("%T %v: SetHeader encodes\n%q\nEncodeHeader\n%q", h, typ, got, want)
				}
				if n := lazy.EncodedLen(typ); n < len(got) {
					t.Fatalf("EncodedLen %d < %d", n, len(got))
				}
				back := reflect.New(reflect.TypeOf(h).Elem()).Interface().(Header)
				if err := lazy.DecodeHeader(back); err != nil || !reflect.DeepEqual(back, h) {
					t.Fatalf("read back %+v, %v; want %+v", back, err, h)
				}
				if !maps.Equal(lazy.ExtFields, eager.ExtFields) {
					t.Fatalf("loaded %v, want %v", lazy.ExtFields, eager.ExtFields)
				}
			}
		}
	}
	// Entries added after SetHeader are kept, beside the header until
	// the map is loaded.
	c := &Command{}
	c.SetHeader(&PullMessageResponseHeader{MaxOffset: 3})
	c.SetExt("x", "y")
	if c.ExtFields != nil {
		t.Fatalf("SetExt built the map: %v", c.ExtFields)
	}
	if c.ExtField("x") != "y" || c.ExtFields["maxOffset"] != "3" || c.ExtFields["x"] != "y" {
		t.Fatalf("%v", c.ExtFields)
	}
}

// TestSetHeaderExt checks that entries SetExt adds to a command whose
// fields SetHeader gave (the AccessKey and Signature of a signed send,
// entries replacing a header field, entries sorting anywhere) encode,
// load and sign as the same entries of a map would, and that SetHeader
// given the same header again keeps them.
func TestSetHeaderExt(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	keys := []string{"AccessKey", "Signature", "SecurityToken", "a", "batch", "bname", "queueId", "queueIdz", "topic", "zz", "", "m", "n", "q\"u", "é"}
	for i := range 2000 {
		var h Header
		switch i % 3 {
		case 0:
			h = &SendMessageRequestHeader{ProducerGroup: "g", Topic: "t", QueueID: int32(rnd.IntN(8)), BornTimestamp: rnd.Int64(), Properties: "UNIQ_KEY\x01k\x02", BrokerName: "b"}
		case 1:
			h = &SendMessageRequestHeaderV2{SendMessageRequestHeader{ProducerGroup: "g", Topic: "t", MaxReconsumeTimes: new(int32(3))}}
		default:
			h = &PullMessageResponseHeader{MaxOffset: rnd.Int64N(100)}
		}
		lazy := &Command{Code: 10, Opaque: 1, Body: []byte("body")}
		lazy.SetHeader(h)
		eager := &Command{Code: 10, Opaque: 1, Body: []byte("body")}
		eager.EncodeHeader(h)
		for range rnd.IntN(5) {
			k, v := keys[rnd.IntN(len(keys))], strconv.Itoa(rnd.IntN(100))
			lazy.SetExt(k, v)
			eager.SetExt(k, v)
		}
		if rnd.IntN(2) == 0 {
			lazy.SetHeader(h) // the same header again: the entries stay
		}
		if lazy.ExtFields != nil {
			t.Fatalf("%T: SetExt built the map", h)
		}
		skip := keys[rnd.IntN(len(keys))]
		if got, want := lazy.AppendExtValues(nil, skip), eager.AppendExtValues(nil, skip); !bytes.Equal(got, want) {
			t.Fatalf("%T: values but %q\n%q\nwant\n%q", h, skip, got, want)
		}
		for _, typ := range []SerializeType{JSON, RocketMQ} {
			want, err1 := eager.AppendTo(nil, typ)
			got, err2 := lazy.AppendTo(nil, typ)
			if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
				t.Fatalf("%T %v: encodes\n%q\nwant\n%q", h, typ, got, want)
			}
		}
		if lazy.LoadExtFields(); !maps.Equal(lazy.ExtFields, eager.ExtFields) {
			t.Fatalf("%T: loaded %v, want %v", h, lazy.ExtFields, eager.ExtFields)
		}
	}
}
