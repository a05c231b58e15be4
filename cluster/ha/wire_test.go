package ha

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/karmanmq/karman/engine/epoch"
)

var sampleMessages = []message{
	{typ: typeHello, version: Version, brokerName: "broker-a", replicaID: "r1", segmentSize: 1 << 30, end: 4096},
	{typ: typeWelcome, segmentSize: 1 << 30, end: 9000, epochs: []epoch.Entry{{Epoch: 1, Start: 0}, {Epoch: 3, Start: 4096}}},
	{typ: typeWelcome, segmentSize: 65536, end: 0, epochs: []epoch.Entry{}},
	{typ: typeRefuse, reason: "broker name broker-b, this is broker-a"},
	{typ: typeAck, offset: 123456},
	{typ: typeTransfer, epoch: epoch.Entry{Epoch: 3, Start: 4096}, offset: 8192, end: 9000, frames: []byte("0123456789abcdef")},
	{typ: typeTransfer, epoch: epoch.Entry{Epoch: 3, Start: 4096}, offset: 9000, end: 9000, frames: []byte{}},
	{typ: typeMetadata, body: []byte(`{"topics":[{"Name":"T","ReadQueues":4,"WriteQueues":4}],"groups":[],"offsets":[]}`)},
}

func TestMessagesRoundTrip(t *testing.T) {
	for _, m := range sampleMessages {
		b := m.encode(nil)
		got, _, err := readMessage(bytes.NewReader(b), nil)
		if err != nil {
			t.Fatalf("type %d: %v", m.typ, err)
		}
		if !reflect.DeepEqual(*got, m) {
			t.Fatalf("type %d: decoded %+v, encoded %+v", m.typ, *got, m)
		}
	}
}

func TestBadMessages(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":             {},
		"unknown type":      {9},
		"cut ack":           {typeAck, 0, 0},
		"negative ack":      {typeAck, 0x80, 0, 0, 0, 0, 0, 0, 0},
		"ack with trailer":  append((&message{typ: typeAck, offset: 1}).encode(nil)[4:], 0),
		"epochs disordered": (&message{typ: typeWelcome, epochs: []epoch.Entry{{Epoch: 2, Start: 10}, {Epoch: 1, Start: 20}}}).encode(nil)[4:],
		"frames past end":   (&message{typ: typeTransfer, offset: 10, end: 12, frames: []byte("abcd")}).encode(nil)[4:],
		"epoch after data":  (&message{typ: typeTransfer, epoch: epoch.Entry{Epoch: 1, Start: 20}, offset: 10, end: 12}).encode(nil)[4:],
	} {
		if _, err := decode(b); !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: %v, want ErrProtocol", name, err)
		}
	}
	huge := []byte{0xff, 0xff, 0xff, 0xff}
	if _, _, err := readMessage(bytes.NewReader(huge), nil); !errors.Is(err, ErrProtocol) {
		t.Errorf("a 4 GiB length: %v, want ErrProtocol", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, m := range sampleMessages {
		f.Add(m.encode(nil)[4:])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decode(b)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v does not match ErrProtocol", err)
			}
			return
		}
		// What decodes encodes to the same bytes.
		if again := m.encode(nil)[4:]; !bytes.Equal(again, b) {
			t.Fatalf("decode then encode changed the message: %x → %x", b, again)
		}
	})
}
