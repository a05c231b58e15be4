package packet

import (
	"bufio"
	"bytes"
	"fmt"
	"testing"
	"unsafe"
)

func TestPacketBuffered(t *testing.T) {
	pub, err := (&Publish{Topic: "a/b", QoS: 1, PacketID: 7, Payload: bytes.Repeat([]byte("x"), 200)}).AppendTo(nil, Version311)
	if err != nil {
		t.Fatal(err)
	}
	ping := []byte{0xC0, 0x00}
	for _, tc := range []struct {
		name  string
		in    []byte
		reads int  // packets read before asking
		want  bool // a whole packet is buffered then
	}{
		{"two packets, none read", append(append([]byte{}, pub...), ping...), 0, true},
		{"two packets, one read", append(append([]byte{}, pub...), ping...), 1, true},
		{"two packets, both read", append(append([]byte{}, pub...), ping...), 2, false},
		{"a partial packet after one", append(append([]byte{}, ping...), pub[:len(pub)-1]...), 1, false},
		{"a header cut in its remaining length", append(append([]byte{}, ping...), pub[:2]...), 1, false},
		{"one byte left", append(append([]byte{}, ping...), 0x30), 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReaderSize(bytes.NewReader(tc.in), 1024)
			d := NewDecoder(br)
			d.Version = Version311
			br.Peek(1) // fill the buffer with what there is
			for range tc.reads {
				if _, err := d.Read(); err != nil {
					t.Fatal(err)
				}
			}
			if got := d.PacketBuffered(); got != tc.want {
				t.Errorf("PacketBuffered() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDecoderReuse(t *testing.T) {
	var stream []byte
	for _, p := range []Packet{
		&Publish{Topic: "a/b", QoS: 1, PacketID: 1, Payload: []byte("one"), Properties: Properties{ContentType: "text/plain"}},
		&Publish{Topic: "c", QoS: 0, Payload: []byte("two")},
		&Puback{PacketID: 1, ReasonCode: NoMatchingSubscribers},
		&Puback{PacketID: 2},
	} {
		var err error
		if stream, err = p.AppendTo(stream, Version5); err != nil {
			t.Fatal(err)
		}
	}
	d := NewDecoder(bytes.NewReader(stream))
	d.Version, d.Reuse = Version5, true
	var got []Packet
	for range 4 {
		p, err := d.Read()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
		switch p := p.(type) {
		case *Publish:
			if p.Properties.ContentType != "" && p.Topic != "a/b" {
				t.Errorf("a property of the packet before is left: %+v", p)
			}
		case *Puback:
			if p.PacketID == 2 && p.ReasonCode != Success {
				t.Errorf("the reason code of the packet before is left: %+v", p)
			}
		}
	}
	if got[0] != got[1] || got[2] != got[3] {
		t.Error("the packets of one type are not the same reused struct")
	}
}

// TestDecoderReuseTopic: a reused PUBLISH keeps the string of its topic
// while the topic stays the same, so a run of PUBLISH packets to one
// topic decodes without allocating; another topic gets its own string.
func TestDecoderReuseTopic(t *testing.T) {
	var stream []byte
	for _, topic := range []string{"a/b", "a/b", "a/c", "a/c"} {
		var err error
		if stream, err = (&Publish{Topic: topic, QoS: 1, PacketID: 1, Payload: []byte("x")}).AppendTo(stream, Version5); err != nil {
			t.Fatal(err)
		}
	}
	d := NewDecoder(bytes.NewReader(stream))
	d.Version, d.Reuse = Version5, true
	var topics []string
	for range 4 {
		p, err := d.Read()
		if err != nil {
			t.Fatal(err)
		}
		topics = append(topics, p.(*Publish).Topic)
	}
	if fmt.Sprint(topics) != "[a/b a/b a/c a/c]" {
		t.Fatalf("topics %q", topics)
	}
	if unsafe.StringData(topics[0]) != unsafe.StringData(topics[1]) || unsafe.StringData(topics[2]) != unsafe.StringData(topics[3]) {
		t.Error("a repeated topic got a new string")
	}
	if unsafe.StringData(topics[1]) == unsafe.StringData(topics[2]) {
		t.Error("another topic kept the string before")
	}

	one, err := (&Publish{Topic: "a/b", QoS: 1, PacketID: 1, Payload: []byte("x")}).AppendTo(nil, Version5)
	if err != nil {
		t.Fatal(err)
	}
	src := &loopReader{b: one}
	d = NewDecoder(src)
	d.Version, d.Reuse = Version5, true
	if _, err := d.Read(); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := d.Read(); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per PUBLISH to the last topic, want 0", n)
	}
}
