package wire

import (
	"encoding/json"
	"testing"
)

func benchSendRequest() *Command {
	return &Command{Code: int32(SendMessage), Language: LanguageGo, Version: 317, Opaque: 12345,
		ExtFields: exampleExt, Body: make([]byte, 1024)}
}

func benchSendResponse() *Command {
	return &Command{Code: 0, Language: LanguageGo, Version: DefaultVersion, Opaque: 12345, Flag: FlagResponse,
		ExtFields: map[string]string{"msgId": "C0A8000A00002A9F0000000000001000", "queueId": "1", "queueOffset": "123456",
			"transactionId": "C000020232F2000000009a1af5500001", "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}}
}

func benchEncode(b *testing.B, c *Command, typ SerializeType) {
	buf, _ := c.AppendTo(nil, typ)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		buf, err = c.AppendTo(buf[:0], typ)
		if err != nil {
			b.Fatal(err)
		}
	}
}

func benchDecode(b *testing.B, c *Command, typ SerializeType) {
	frame, _ := c.AppendTo(nil, typ)
	frame = frame[4:]
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(frame); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeSendRequestJSON(b *testing.B)    { benchEncode(b, benchSendRequest(), JSON) }
func BenchmarkEncodeSendRequestBinary(b *testing.B)  { benchEncode(b, benchSendRequest(), RocketMQ) }
func BenchmarkDecodeSendRequestJSON(b *testing.B)    { benchDecode(b, benchSendRequest(), JSON) }
func BenchmarkDecodeSendRequestBinary(b *testing.B)  { benchDecode(b, benchSendRequest(), RocketMQ) }
func BenchmarkEncodeSendResponseJSON(b *testing.B)   { benchEncode(b, benchSendResponse(), JSON) }
func BenchmarkEncodeSendResponseBinary(b *testing.B) { benchEncode(b, benchSendResponse(), RocketMQ) }
func BenchmarkDecodeSendResponseJSON(b *testing.B)   { benchDecode(b, benchSendResponse(), JSON) }
func BenchmarkDecodeSendResponseBinary(b *testing.B) { benchDecode(b, benchSendResponse(), RocketMQ) }

// stdHeader is the header shape decoded with encoding/json, for comparison
// with the hand-written codec.
type stdHeader struct {
	Code      int32             `json:"code"`
	Language  string            `json:"language"`
	Version   int32             `json:"version"`
	Opaque    int32             `json:"opaque"`
	Flag      int32             `json:"flag"`
	Remark    string            `json:"remark"`
	ExtFields map[string]string `json:"extFields"`
}

func BenchmarkStdlibEncodeSendRequestJSON(b *testing.B) {
	c := benchSendRequest()
	h := stdHeader{Code: c.Code, Language: "GO", Version: c.Version, Opaque: c.Opaque, ExtFields: c.ExtFields}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(&h); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStdlibDecodeSendRequestJSON(b *testing.B) {
	frame, _ := benchSendRequest().AppendTo(nil, JSON)
	header := frame[8 : len(frame)-1024]
	b.ReportAllocs()
	for b.Loop() {
		var h stdHeader
		if err := json.Unmarshal(header, &h); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeSendRequestHeader(b *testing.B) {
	c := benchSendRequest()
	b.ReportAllocs()
	for b.Loop() {
		var h SendMessageRequestHeader
		if err := c.DecodeHeader(&h); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeSendResponseHeader(b *testing.B) {
	h := SendMessageResponseHeader{MsgID: "C0A8000A00002A9F0000000000001000", QueueID: 1, QueueOffset: 123456}
	b.ReportAllocs()
	for b.Loop() {
		c := &Command{}
		c.EncodeHeader(&h)
	}
}

// BenchmarkDecodeSendRequestAndHeader decodes a Go client's SEND_MESSAGE
// frame and its typed header, as the broker does: with the extFields map,
// and with DeferExtFields.
func BenchmarkDecodeSendRequestAndHeader(b *testing.B) {
	frame := goClientFrame(b, "send.bin")
	for _, deferExt := range []bool{false, true} {
		name := "map"
		if deferExt {
			name = "deferred"
		}
		b.Run(name, func(b *testing.B) {
			o := DecodeOptions{DeferExtFields: deferExt}
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				c, err := o.Decode(frame)
				if err != nil {
					b.Fatal(err)
				}
				var h SendMessageRequestHeader
				if err := c.DecodeHeader(&h); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// As the broker reads a single send: the properties go into the
	// memory of the stored message's.
	b.Run("send", func(b *testing.B) {
		o := DecodeOptions{DeferExtFields: true}
		b.SetBytes(int64(len(frame)))
		b.ReportAllocs()
		var props []byte
		for b.Loop() {
			c, err := o.Decode(frame)
			if err != nil {
				b.Fatal(err)
			}
			var h SendMessageRequestHeader
			if props, err = c.DecodeSendHeader(&h, props[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
