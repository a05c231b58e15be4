package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exampleHeader is the SEND_MESSAGE header from the protocol reference, as
// the Go client writes it.
const exampleHeader = `{"code":10,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"producerGroup":"pg","topic":"TopicA","queueId":"1","sysFlag":"0","bornTimestamp":"1700000000000","flag":"0","properties":"UNIQ_KEY\u0001AB\u0002WAIT\u0001true\u0002","reconsumeTimes":"0","unitMode":"false","maxReconsumeTimes":"0","defaultTopic":"TBW102","defaultTopicQueueNums":"4","batch":"false","bname":"broker-a"}}`

var exampleExt = map[string]string{
	"producerGroup": "pg", "topic": "TopicA", "queueId": "1", "sysFlag": "0",
	"bornTimestamp": "1700000000000", "flag": "0",
	"properties":     "UNIQ_KEY\x01AB\x02WAIT\x01true\x02",
	"reconsumeTimes": "0", "unitMode": "false", "maxReconsumeTimes": "0",
	"defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "batch": "false", "bname": "broker-a",
}

// rawFrame builds the bytes after the length prefix from a header type,
// header and body.
func rawFrame(typ SerializeType, header string, body string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(typ)<<24|uint32(len(header)))
	b = append(b, header...)
	return append(b, body...)
}

// withPrefix adds the 4-byte length prefix.
func withPrefix(frame []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)
}

// sameCommand compares two commands, treating nil and empty maps and
// slices as equal.
func sameCommand(a, b *Command) bool {
	return a.Code == b.Code && a.Language == b.Language && a.Version == b.Version &&
		a.Opaque == b.Opaque && a.Flag == b.Flag && a.Remark == b.Remark &&
		maps.Equal(a.ExtFields, b.ExtFields) && bytes.Equal(a.Body, b.Body) &&
		a.SerializeType == b.SerializeType
}

func TestDecodeReferenceExample(t *testing.T) {
	for _, strict := range []bool{false, true} {
		c, err := DecodeOptions{StrictExtFields: strict}.Decode(rawFrame(JSON, exampleHeader, "body"))
		if err != nil {
			t.Fatalf("strict=%v: %v", strict, err)
		}
		want := &Command{Code: 10, Language: LanguageGo, Version: 317, Opaque: 1, Flag: 0,
			ExtFields: exampleExt, Body: []byte("body"), SerializeType: JSON}
		if !sameCommand(c, want) {
			t.Fatalf("strict=%v:\n got %+v\nwant %+v", strict, c, want)
		}
		if c.IsResponse() || c.IsOneway() {
			t.Fatal("flags")
		}
		var h SendMessageRequestHeader
		if err := c.DecodeHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Properties != "UNIQ_KEY\x01AB\x02WAIT\x01true\x02" || h.QueueID != 1 || h.BornTimestamp != 1700000000000 || h.BrokerName != "broker-a" {
			t.Fatalf("header %+v", h)
		}
	}
}

func TestGoClientFrames(t *testing.T) {
	load := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "goclient", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	send, err := DecodeFrame(load("send.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if send.Code != int32(SendMessage) || send.Language != LanguageGo || send.Version != 317 ||
		!maps.Equal(send.ExtFields, exampleExt) || string(send.Body) != "hello" {
		t.Fatalf("send: %+v", send)
	}
	pull, err := DecodeFrame(load("pull.bin"))
	if err != nil {
		t.Fatal(err)
	}
	pullBin, err := DecodeFrame(load("pull_binary.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if pullBin.SerializeType != RocketMQ || pull.SerializeType != JSON {
		t.Fatal("serialize types")
	}
	pullBin.SerializeType = JSON
	if !sameCommand(pull, pullBin) {
		t.Fatalf("JSON and binary pull differ:\n%+v\n%+v", pull, pullBin)
	}
	var ph PullMessageRequestHeader
	if err := pull.DecodeHeader(&ph); err != nil {
		t.Fatal(err)
	}
	if ph.SuspendTimeoutMillis != 20000 || ph.SysFlag != PullFlagSuspend || ph.Subscription != "" || ph.ExpressionType != "TAG" {
		t.Fatalf("pull header %+v", ph)
	}
	resp, err := DecodeFrame(load("response.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if !resp.IsResponse() || resp.Code != 0 || len(resp.ExtFields) != 0 || resp.Body != nil {
		t.Fatalf("response %+v", resp)
	}
	hb, err := DecodeFrame(load("heartbeat.bin"))
	if err != nil {
		t.Fatal(err)
	}
	var data HeartbeatData
	if err := DecodeJSONBody(hb.Body, &data); err != nil {
		t.Fatal(err)
	}
	if data.ClientID != "10.0.0.5@12345#1700000000000000000" || len(data.ProducerDataSet) != 1 {
		t.Fatalf("heartbeat %+v", data)
	}
	// Our own encoding of a Go-client frame must decode to the same command.
	for _, typ := range []SerializeType{JSON, RocketMQ} {
		enc, err := send.AppendTo(nil, typ)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeFrame(enc)
		if err != nil {
			t.Fatal(err)
		}
		again.SerializeType = send.SerializeType
		if !sameCommand(send, again) {
			t.Fatalf("%v re-encode differs", typ)
		}
	}
}

func TestEncodeJSONExact(t *testing.T) {
	c := &Command{Code: 0, Language: LanguageGo, Version: 473, Opaque: 7, Flag: FlagResponse,
		Remark:    "tab\there \"q\" \\ \x01\x1f é \xff",
		ExtFields: map[string]string{"queueOffset": "42", "msgId": "C0A8000A00002A9F0000000000000000", "queueId": "1"},
		Body:      []byte{1, 2}}
	got, err := c.AppendTo([]byte("xx"), JSON)
	if err != nil {
		t.Fatal(err)
	}
	header := `{"code":0,"language":"GO","version":473,"opaque":7,"flag":1,` +
		`"remark":"tab\there \"q\" \\ \u0001\u001f é \ufffd",` +
		`"extFields":{"msgId":"C0A8000A00002A9F0000000000000000","queueId":"1","queueOffset":"42"},` +
		`"serializeTypeCurrentRPC":"JSON"}`
	want := append([]byte("xx"), withPrefix(append(rawFrame(JSON, header, ""), 1, 2))...)
	if !bytes.Equal(got, want) {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}

func TestEncodeBinaryExact(t *testing.T) {
	c := &Command{Code: 105, Language: LanguageJava, Version: 401, Opaque: -2, Flag: FlagOneway,
		Remark: "r", ExtFields: map[string]string{"topic": "T"}, Body: []byte("B")}
	got, err := c.AppendTo(nil, RocketMQ)
	if err != nil {
		t.Fatal(err)
	}
	hdr := []byte{
		0, 105, // code
		0,          // JAVA
		0x01, 0x91, // version 401
		0xff, 0xff, 0xff, 0xfe, // opaque -2
		0, 0, 0, 2, // flag
		0, 0, 0, 1, 'r', // remark
		0, 0, 0, 12, // ext length
		0, 5, 't', 'o', 'p', 'i', 'c', 0, 0, 0, 1, 'T',
	}
	want := withPrefix(append(binary.BigEndian.AppendUint32(nil, 1<<24|uint32(len(hdr))), append(hdr, 'B')...))
	if !bytes.Equal(got, want) {
		t.Fatalf("got  % x\nwant % x", got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	big := strings.Repeat("x", 70000)
	cases := []struct {
		name string
		cmd  *Command
	}{
		{"empty", &Command{}},
		{"send request", &Command{Code: 10, Language: LanguageGo, Version: 317, Opaque: 1, ExtFields: exampleExt, Body: []byte("hello")}},
		{"response", &Command{Code: 17, Language: LanguageJava, Version: 473, Opaque: 99, Flag: FlagResponse, Remark: "topic not exist"}},
		{"oneway", &Command{Code: 15, Flag: FlagOneway, Opaque: -1 << 31}},
		{"negative code", &Command{Code: -1006, Version: -1}},
		{"unknown language", &Command{Code: 1, Language: 200}},
		{"unicode", &Command{Code: 1, Remark: "日本語 \u2028 😀", ExtFields: map[string]string{"ключ": "значение", "": "empty key", "nul": "\x00"}}},
		{"big value", &Command{Code: 1, ExtFields: map[string]string{"v": big}}},
		{"many keys", &Command{Code: 1, ExtFields: func() map[string]string {
			m := map[string]string{}
			for i := range 100 {
				m[strings.Repeat("k", i+1)] = strings.Repeat("v", i)
			}
			return m
		}()}},
	}
	for _, tc := range cases {
		for _, typ := range []SerializeType{JSON, RocketMQ} {
			t.Run(tc.name+"/"+typ.String(), func(t *testing.T) {
				enc, err := tc.cmd.AppendTo(nil, typ)
				if err != nil {
					t.Fatal(err)
				}
				if n := tc.cmd.EncodedLen(typ); len(enc) > n || (typ == RocketMQ && len(enc) != n) {
					t.Fatalf("EncodedLen = %d, frame is %d bytes", n, len(enc))
				}
				got, err := DecodeFrame(enc)
				if err != nil {
					t.Fatal(err)
				}
				want := *tc.cmd
				want.SerializeType = typ
				if !sameCommand(got, &want) {
					t.Fatalf("got %+v\nwant %+v", got, &want)
				}
				again, err := got.AppendTo(nil, typ)
				if err != nil || !bytes.Equal(again, enc) {
					t.Fatalf("re-encoding differs (err %v)", err)
				}
			})
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	cases := []struct {
		name string
		cmd  *Command
		typ  SerializeType
		want error
	}{
		{"wide code in binary", &Command{Code: 200050}, RocketMQ, ErrOutOfRange},
		{"wide version in binary", &Command{Version: 40000}, RocketMQ, ErrOutOfRange},
		{"long key in binary", &Command{ExtFields: map[string]string{strings.Repeat("k", 40000): ""}}, RocketMQ, ErrOutOfRange},
		{"huge header", &Command{Remark: strings.Repeat("\x01", 3<<20)}, JSON, ErrOutOfRange},
		{"unknown type", &Command{}, 7, ErrUnknownSerializeType},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dst := []byte("keep")
			out, err := tc.cmd.AppendTo(dst, tc.typ)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if string(out) != "keep" {
				t.Fatalf("dst not restored: %q", out)
			}
		})
	}
	// Wide codes are fine in JSON headers.
	enc, err := (&Command{Code: 200050}).AppendTo(nil, JSON)
	if err != nil {
		t.Fatal(err)
	}
	c, err := DecodeFrame(enc)
	if err != nil || c.Code != 200050 || RequestCode(c.Code).Canonical() != PopMessage {
		t.Fatalf("%v %+v", err, c)
	}
}

func TestDecodeLenientJSON(t *testing.T) {
	cases := []struct {
		name   string
		header string
		want   Command
		strict bool // also accepted in strict mode
	}{
		{"whitespace and unknown keys",
			" {\n\"code\" : 11 , \"unknown\":{\"a\":[1,2,{\"b\":null}],\"c\":-1.5e3}, \"serializeTypeCurrentRPC\":\"JSON\",\"opaque\":5}\t",
			Command{Code: 11, Opaque: 5}, true},
		{"numbers in extFields",
			`{"code":0,"extFields":{"queueOffset":42,"neg":-7,"f":1.5,"e":1E+9,"t":true,"fl":false,"n":null,"s":"x"}}`,
			Command{ExtFields: map[string]string{"queueOffset": "42", "neg": "-7", "f": "1.5", "e": "1E+9", "t": "true", "fl": "false", "s": "x"}}, false},
		{"language as number", `{"language":9}`, Command{Language: LanguageGo}, true},
		{"language lower case", `{"language":"java"}`, Command{Language: LanguageJava}, true},
		{"language unknown name", `{"language":"COBOL"}`, Command{Language: LanguageOther}, true},
		{"quoted numbers", `{"code":"10","opaque":"-3"}`, Command{Code: 10, Opaque: -3}, true},
		{"nulls", `{"code":null,"remark":null,"extFields":null,"language":null}`, Command{}, true},
		{"escapes", `{"remark":"\u00e9\ud83d\ude00\n\/\"\\\b\f\r\t","extFields":{"k\u0001":"v\u0002"}}`,
			Command{Remark: "é😀\n/\"\\\b\f\r\t", ExtFields: map[string]string{"k\x01": "v\x02"}}, true},
		{"lone surrogate", `{"remark":"a\ud800b\udc00"}`, Command{Remark: "a\uFFFDb\uFFFD"}, true},
		{"invalid utf8 repaired", "{\"remark\":\"a\xffb\"}", Command{Remark: "a\uFFFDb"}, true},
		{"raw control char", "{\"remark\":\"a\x01b\"}", Command{Remark: "a\x01b"}, false},
		{"duplicate keys", `{"code":1,"code":2,"extFields":{"a":"1","a":"2"}}`, Command{Code: 2, ExtFields: map[string]string{"a": "2"}}, true},
		{"empty object", `{}`, Command{}, true},
		{"empty extFields", `{"extFields":{}}`, Command{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Decode(rawFrame(JSON, tc.header, ""))
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if !sameCommand(c, &want) {
				t.Fatalf("got %+v\nwant %+v", c, &want)
			}
			_, err = DecodeOptions{StrictExtFields: true}.Decode(rawFrame(JSON, tc.header, ""))
			if tc.strict && err != nil {
				t.Fatalf("strict: %v", err)
			}
			if !tc.strict && !errors.Is(err, ErrMalformed) {
				t.Fatalf("strict: err = %v, want ErrMalformed", err)
			}
		})
	}
}

func TestDecodeMalformed(t *testing.T) {
	binHeader := func(mut func(h []byte) []byte) []byte {
		enc, err := (&Command{Code: 1, Remark: "rr", ExtFields: map[string]string{"key": "value"}}).AppendTo(nil, RocketMQ)
		if err != nil {
			t.Fatal(err)
		}
		h := mut(append([]byte(nil), enc[8:]...))
		return rawFrame(RocketMQ, string(h), "")
	}
	cases := []struct {
		name  string
		frame []byte
		want  error
		msg   string
	}{
		{"empty", nil, ErrMalformed, "4-byte header length"},
		{"short", []byte{0, 0}, ErrMalformed, "4-byte header length"},
		{"header longer than frame", []byte{0, 0, 0, 10, '{', '}'}, ErrMalformed, "header length 10"},
		{"unknown type", rawFrame(2, "{}", ""), ErrUnknownSerializeType, "type byte is 2"},
		{"not json", rawFrame(JSON, "hello", ""), ErrMalformed, "json header"},
		{"truncated json", rawFrame(JSON, `{"code":1`, ""), ErrMalformed, "end of header"},
		{"trailing garbage", rawFrame(JSON, `{"code":1}x`, ""), ErrMalformed, "trailing"},
		{"code overflow", rawFrame(JSON, `{"code":4294967296}`, ""), ErrMalformed, "int32"},
		{"code float", rawFrame(JSON, `{"code":1.5}`, ""), ErrMalformed, "integer"},
		{"language range", rawFrame(JSON, `{"language":300}`, ""), ErrMalformed, "language"},
		{"remark number", rawFrame(JSON, `{"remark":1}`, ""), ErrMalformed, "remark"},
		{"extFields array", rawFrame(JSON, `{"extFields":[]}`, ""), ErrMalformed, "extFields"},
		{"extFields object value", rawFrame(JSON, `{"extFields":{"a":{}}}`, ""), ErrMalformed, `extFields["a"]`},
		{"bad escape", rawFrame(JSON, `{"remark":"\x"}`, ""), ErrMalformed, "escape"},
		{"bad unicode escape", rawFrame(JSON, `{"remark":"\u12"}`, ""), ErrMalformed, "escape"},
		{"unterminated string", rawFrame(JSON, `{"remark":"abc`, ""), ErrMalformed, "unterminated"},
		{"bad literal", rawFrame(JSON, `{"x":tru}`, ""), ErrMalformed, "literal"},
		{"deep nesting", rawFrame(JSON, `{"x":`+strings.Repeat("[", 100)+strings.Repeat("]", 100)+`}`, ""), ErrMalformed, "nested"},
		{"binary too short", rawFrame(RocketMQ, "abc", ""), ErrMalformed, "fixed part"},
		{"binary remark too long", binHeader(func(h []byte) []byte { binary.BigEndian.PutUint32(h[13:], 1000); return h }), ErrMalformed, "remark length"},
		{"binary ext too long", binHeader(func(h []byte) []byte { binary.BigEndian.PutUint32(h[19:], 1000); return h }), ErrMalformed, "extFields length"},
		{"binary key length negative", binHeader(func(h []byte) []byte { h[23] = 0x80; return h }), ErrMalformed, "key length"},
		{"binary value length too long", binHeader(func(h []byte) []byte { binary.BigEndian.PutUint32(h[28:], 99); return h }), ErrMalformed, "value length"},
		{"binary remark over ext length", binHeader(func(h []byte) []byte { return h[:21] }), ErrMalformed, "remark length"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Decode(tc.frame)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v (cmd %+v), want %v", err, c, tc.want)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("%T is not a *DecodeError", err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %q does not mention %q", err, tc.msg)
			}
		})
	}
}

func TestDecodeFrameLength(t *testing.T) {
	frame := withPrefix(rawFrame(JSON, "{}", "body"))
	if _, err := DecodeFrame(frame); err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeFrame(frame[:len(frame)-1]); !errors.Is(err, ErrMalformed) {
		t.Fatalf("short frame: %v", err)
	}
	if _, err := DecodeFrame(append(frame, 0)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("long frame: %v", err)
	}
	if _, err := (DecodeOptions{MaxFrameSize: 5}).DecodeFrame(frame); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("limit: %v", err)
	}
	if _, err := DecodeFrame([]byte{0xff, 0xff, 0xff, 0xff}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("negative: %v", err)
	}
}

func TestBinaryLenientLengths(t *testing.T) {
	// Like Java, a negative remark or extFields length means "absent", and
	// bytes after the extFields block are ignored.
	h := []byte{0, 10, 9, 1, 61, 0, 0, 0, 1, 0, 0, 0, 0}
	h = append(h, 0xff, 0xff, 0xff, 0xff) // remark -1
	h = append(h, 0xff, 0xff, 0xff, 0xfe) // ext -2
	h = append(h, "junk"...)
	c, err := Decode(rawFrame(RocketMQ, string(h), "b"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Command{Code: 10, Language: LanguageGo, Version: 317, Opaque: 1, Body: []byte("b"), SerializeType: RocketMQ}
	if !sameCommand(c, want) {
		t.Fatalf("%+v", c)
	}
}

func TestBodyAliasesFrame(t *testing.T) {
	frame := rawFrame(JSON, "{}", "abc")
	c, err := Decode(frame)
	if err != nil {
		t.Fatal(err)
	}
	if cap(c.Body) != len(c.Body) {
		t.Fatal("body capacity must be clipped so appends cannot clobber the frame")
	}
	frame[len(frame)-1] = 'X'
	if string(c.Body) != "abX" {
		t.Fatal("body should alias the frame")
	}
}
