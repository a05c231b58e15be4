package packet

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

func benchPublish(v byte) *Publish {
	p := &Publish{Topic: "sensors/room-1/temperature", QoS: 1, PacketID: 42, Payload: bytes.Repeat([]byte{'x'}, 256)}
	if v == Version5 {
		p.Properties.UserProperties = []UserProperty{{"k", "v"}}
		p.Properties.MessageExpiry = 60
	}
	return p
}

func benchmarkEncode(b *testing.B, v byte) {
	p := benchPublish(v)
	buf := make([]byte, 0, 512)
	b.SetBytes(int64(p.Size(v)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = p.AppendTo(buf[:0], v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodePublish256V3(b *testing.B) { benchmarkEncode(b, Version311) }
func BenchmarkEncodePublish256V5(b *testing.B) { benchmarkEncode(b, Version5) }

// loopReader replays one packet forever.
type loopReader struct {
	b []byte
	i int
}

func (r *loopReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.b[r.i:])
		n += c
		r.i = (r.i + c) % len(r.b)
	}
	return n, nil
}

var _ io.Reader = (*loopReader)(nil)

func benchmarkDecode(b *testing.B, v byte) {
	p := benchPublish(v)
	enc, _ := p.AppendTo(nil, v)
	d := NewDecoder(bufio.NewReaderSize(&loopReader{b: enc}, 64<<10))
	d.Version = v
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Read(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodePublish256V3(b *testing.B) { benchmarkDecode(b, Version311) }
func BenchmarkDecodePublish256V5(b *testing.B) { benchmarkDecode(b, Version5) }
