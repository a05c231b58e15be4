package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

func isWireError(err error) bool {
	return errors.Is(err, ErrMalformed) || errors.Is(err, ErrFrameTooLarge) || errors.Is(err, ErrUnknownSerializeType)
}

// FuzzDecode feeds arbitrary bytes (a frame without its length prefix) to
// the decoder in both modes and to a Reader. Valid frames must survive
// decode → encode → decode unchanged, and re-encoding must be stable.
func FuzzDecode(f *testing.F) {
	f.Add(rawFrame(JSON, exampleHeader, "hello"))
	f.Add(rawFrame(JSON, `{"code":200050,"language":"JAVA","extFields":{"n":42}}`, ""))
	f.Fuzz(func(t *testing.T, data []byte) {
		lenient, lerr := Decode(data)
		strict, serr := DecodeOptions{StrictExtFields: true}.Decode(data)
		if lerr != nil && !isWireError(lerr) {
			t.Fatalf("untyped error %T: %v", lerr, lerr)
		}
		if serr != nil && !isWireError(serr) {
			t.Fatalf("untyped strict error %T: %v", serr, serr)
		}
		if serr == nil && (lerr != nil || !sameCommand(strict, lenient)) {
			t.Fatalf("strict accepted what lenient did not decode the same way: %v", lerr)
		}
		if lerr == nil {
			enc, err := lenient.AppendTo(nil, lenient.SerializeType)
			if err != nil {
				if errors.Is(err, ErrOutOfRange) && len(data) > MaxHeaderLength/6 {
					return
				}
				t.Fatalf("re-encode: %v (%+v)", err, lenient)
			}
			if n := lenient.EncodedLen(lenient.SerializeType); len(enc) > n {
				t.Fatalf("EncodedLen %d < frame %d", n, len(enc))
			}
			again, err := DecodeFrame(enc)
			if err != nil {
				t.Fatalf("decode of re-encoded frame: %v\n%q", err, enc)
			}
			if !sameCommand(lenient, again) {
				t.Fatalf("round trip changed the command:\n%+v\n%+v", lenient, again)
			}
			enc2, err := again.AppendTo(nil, again.SerializeType)
			if err != nil || !bytes.Equal(enc, enc2) {
				t.Fatalf("encoding not stable: %v", err)
			}
		}
		// The same bytes as a stream of frames.
		r := NewReader(bytes.NewReader(data), DecodeOptions{MaxFrameSize: 1 << 20})
		for range 64 {
			_, err := r.ReadCommand()
			if err == nil {
				continue
			}
			if err != io.EOF && err != io.ErrUnexpectedEOF && !isWireError(err) {
				t.Fatalf("reader: untyped error %T: %v", err, err)
			}
			break
		}
	})
}

// FuzzDecodeBatch checks that batch decoding never panics and that valid
// bodies re-encode to the same bytes (MAGICCODE and BODYCRC aside, which
// the encoder writes as zero).
func FuzzDecodeBatch(f *testing.F) {
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		entries, err := DecodeBatch(body)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		enc, err := AppendBatch(nil, entries)
		if err != nil {
			// Properties above 32767 bytes decode (uint16) but do not encode.
			if errors.Is(err, ErrOutOfRange) {
				return
			}
			t.Fatal(err)
		}
		if len(enc) != len(body) {
			t.Fatalf("re-encoded %d bytes, input %d", len(enc), len(body))
		}
		for off := 0; off < len(body); {
			total := int(int32(be32(body[off:])))
			copy(enc[off+4:off+12], body[off+4:off+12])
			off += total
		}
		if !bytes.Equal(enc, body) {
			t.Fatal("re-encoding differs")
		}
	})
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// FuzzJSONString checks the hand-written string scanner and encoder
// against encoding/json.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{`"abc"`, `"\u0001\u0002"`, `"\ud83d\ude00"`, `"\ud800"`, "\"\xff\"", `"\"\\\/\b\f\n\r\t"`, `"é"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		// Decoding: a complete JSON string literal must decode as the
		// standard library decodes it, and be rejected when it rejects it.
		var std string
		stdErr := json.Unmarshal(in, &std)
		s := &jsonScanner{data: in, strict: true}
		got, err := s.readString()
		s.skipWS() // the standard library allows whitespace around the value
		ours := err == nil && s.pos == len(in)
		stdIsString := stdErr == nil && len(in) > 0 && in[0] == '"'
		if ours != stdIsString {
			t.Fatalf("input %q: ours ok=%v (%v), stdlib ok=%v (%v)", in, ours, err, stdIsString, stdErr)
		}
		if ours && string(got) != std {
			t.Fatalf("input %q: ours %q, stdlib %q", in, got, std)
		}
		// Encoding: our output must decode (by both decoders) to what the
		// standard library's own encoding decodes to.
		enc := appendJSONString(nil, string(in))
		var want, back string
		stdEnc, _ := json.Marshal(string(in))
		if err := json.Unmarshal(stdEnc, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(enc, &back); err != nil || back != want {
			t.Fatalf("encoded %q: stdlib decodes %q (%v), want %q", enc, back, err, want)
		}
		s = &jsonScanner{data: enc, strict: true}
		got, err = s.readString()
		if err != nil || string(got) != want || s.pos != len(enc) {
			t.Fatalf("encoded %q: we decode %q (%v), want %q", enc, got, err, want)
		}
	})
}

// FuzzDecodeTopicRouteData feeds arbitrary bodies to the route decoder,
// which also takes fastjson's bare numeric keys. A body it accepts must
// survive encode → decode unchanged.
func FuzzDecodeTopicRouteData(f *testing.F) {
	f.Add([]byte(`{"orderTopicConf":"","queueDatas":[{"brokerName":"b","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0}],"brokerDatas":[{"cluster":"c","brokerName":"b","brokerAddrs":{"0":"127.0.0.1:10911"}}]}`))
	f.Add([]byte(`{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911", 1 :"127.0.0.1:10921"},"brokerName":"b","cluster":"c"}],"queueDatas":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		route, err := DecodeTopicRouteData(body)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		enc, err := route.Encode()
		if err != nil {
			t.Fatalf("encode a decoded route: %v", err)
		}
		again, err := DecodeTopicRouteData(enc)
		if err != nil {
			t.Fatalf("decode of re-encoded route: %v\n%s", err, enc)
		}
		if enc2, _ := again.Encode(); !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the route:\n%s\n%s", enc, enc2)
		}
	})
}

// FuzzDecodeHeartbeat feeds arbitrary bodies to the heartbeat decoder
// (code sets as numbers or strings). A body it accepts must survive
// encode → decode unchanged.
func FuzzDecodeHeartbeat(f *testing.F) {
	f.Add([]byte(`{"clientID":"c","producerDataSet":[{"groupName":"p"}],"consumerDataSet":[{"groupName":"g","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[{"topic":"t","subString":"a || b","tagsSet":["a","b"],"codeSet":[97,"98"],"subVersion":1,"expressionType":"TAG"}],"unitMode":false}]}`))
	f.Add([]byte(`{"clientID":"c","producerDataSet":null,"consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"t","codeSet":null}]}],"heartbeatFingerprint":7,"withoutSub":true}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var hb HeartbeatData
		if err := DecodeJSONBody(body, &hb); err != nil {
			return
		}
		enc, err := EncodeJSONBody(hb)
		if err != nil {
			t.Fatalf("encode a decoded heartbeat: %v", err)
		}
		var again HeartbeatData
		if err := DecodeJSONBody(enc, &again); err != nil {
			t.Fatalf("decode of re-encoded heartbeat: %v\n%s", err, enc)
		}
		if enc2, _ := EncodeJSONBody(again); !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the heartbeat:\n%s\n%s", enc, enc2)
		}
	})
}

// FuzzReadRefusedHead feeds an arbitrary stream to a Reader with a small
// frame limit; whenever a frame is refused for its size, its header is
// read. Neither may panic, errors must be typed or I/O errors, and the
// bytes left can never exceed the stream that declared them.
func FuzzReadRefusedHead(f *testing.F) {
	const limit = 64
	big := rawFrame(JSON, exampleHeader, string(make([]byte, 2*limit)))
	f.Add(append(binary.BigEndian.AppendUint32(nil, uint32(len(big))), big...))
	bin := rawFrame(RocketMQ, "", "")
	f.Add(binary.BigEndian.AppendUint32(nil, 1<<30))
	f.Add(append(binary.BigEndian.AppendUint32(nil, limit+1), bin...))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), DecodeOptions{MaxFrameSize: limit})
		_, err := r.ReadFrame()
		if !errors.Is(err, ErrFrameTooLarge) {
			return
		}
		declared := int(binary.BigEndian.Uint32(data))
		c, rest, err := r.ReadRefusedHead(1024)
		if err != nil {
			if !isWireError(err) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		if c == nil || rest < 0 || rest > declared {
			t.Fatalf("command %v, %d bytes left of %d", c, rest, declared)
		}
	})
}

// FuzzExtValues checks that the signed content read from deferred
// extFields in place (AppendExtValues, ExtField) is what the loaded map
// gives, for any frame: what the broker verifies is what the client
// signed.
func FuzzExtValues(f *testing.F) {
	f.Add(rawFrame(JSON, exampleHeader, "hello"))
	f.Add(rawFrame(JSON, `{"code":10,"extFields":{"b":"2","a":"1","Signature":"s","a":"3","AccessKey":"k"}}`, "body"))
	f.Add(rawFrame(JSON, `{"code":10,"extFields":{"k":"\u00e9\"x","n":42,"t":true,"z":null}}`, ""))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 4 {
			return
		}
		deferred, err := DecodeOptions{DeferExtFields: true}.Decode(data[4:])
		if err != nil {
			return
		}
		loaded, err := DecodeOptions{}.Decode(data[4:])
		if err != nil {
			t.Fatalf("decodes deferred but not loaded: %v", err)
		}
		got := deferred.AppendExtValues(nil, "Signature")
		want := loaded.AppendExtValues(nil, "Signature")
		if !bytes.Equal(got, want) {
			t.Fatalf("deferred content %q, loaded %q", got, want)
		}
		for k, v := range loaded.ExtFields {
			if g := deferred.ExtField(k); g != v {
				t.Fatalf("ExtField(%q) = %q, loaded %q", k, g, v)
			}
		}
	})
}
