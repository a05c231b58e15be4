package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func TestReader(t *testing.T) {
	var stream []byte
	var want []*Command
	for i := range 50 {
		c := &Command{Code: int32(i), Opaque: int32(i), ExtFields: map[string]string{"i": itoa(i)}, Body: bytes.Repeat([]byte{byte(i)}, i*1000)}
		typ := SerializeType(i % 2)
		var err error
		stream, err = c.AppendTo(stream, typ)
		if err != nil {
			t.Fatal(err)
		}
		c.SerializeType = typ
		want = append(want, c)
	}
	// One byte at a time, to exercise partial reads.
	r := NewReader(iotest.OneByteReader(bytes.NewReader(stream)), DecodeOptions{})
	var got []*Command
	for {
		c, err := r.ReadCommand()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d commands, want %d", len(got), len(want))
	}
	for i := range want {
		if !sameCommand(got[i], want[i]) {
			t.Fatalf("command %d differs", i)
		}
	}
	// Bodies must not share a buffer.
	if len(got[10].Body) > 0 {
		got[10].Body[0] = 0xEE
		if got[11].Body[0] == 0xEE {
			t.Fatal("bodies share memory")
		}
	}
}

func TestReaderErrors(t *testing.T) {
	prefix := func(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }
	good, _ := (&Command{Code: 1}).AppendTo(nil, JSON)
	cases := []struct {
		name   string
		stream []byte
		opts   DecodeOptions
		want   error
	}{
		{"empty", nil, DecodeOptions{}, io.EOF},
		{"partial prefix", []byte{0, 0}, DecodeOptions{}, io.ErrUnexpectedEOF},
		{"partial frame", good[:len(good)-3], DecodeOptions{}, io.ErrUnexpectedEOF},
		{"negative length", prefix(-1), DecodeOptions{}, ErrMalformed},
		{"zero length", prefix(0), DecodeOptions{}, ErrMalformed},
		{"length 3", prefix(3), DecodeOptions{}, ErrMalformed},
		{"absurd length", prefix(0x7fffffff), DecodeOptions{}, ErrFrameTooLarge},
		{"over default limit", prefix(DefaultMaxFrameSize + 1), DecodeOptions{}, ErrFrameTooLarge},
		{"over custom limit", good, DecodeOptions{MaxFrameSize: 10}, ErrFrameTooLarge},
		{"bad header", append(prefix(6), 0, 0, 0, 2, 'x', 'y'), DecodeOptions{}, ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(tc.stream), tc.opts).ReadCommand()
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	// The limit itself is allowed.
	frame := withPrefix(rawFrame(JSON, "{}", string(make([]byte, 94))))
	if _, err := NewReader(bytes.NewReader(frame), DecodeOptions{MaxFrameSize: 100}).ReadFrame(); err != nil {
		t.Fatal(err)
	}
}

func TestReaderRecycle(t *testing.T) {
	var stream []byte
	for _, body := range []string{"first body", "second", "a third body, longer than the others"} {
		b, err := (&Command{Code: 10, ExtFields: map[string]string{"k": body}, Body: []byte(body)}).AppendTo(nil, JSON)
		if err != nil {
			t.Fatal(err)
		}
		stream = append(stream, b...)
	}
	r := NewReader(bytes.NewReader(stream), DecodeOptions{DeferExtFields: true})
	first, err := r.ReadCommand()
	if err != nil {
		t.Fatal(err)
	}
	var h struct{ k string }
	first.LoadExtFields()
	h.k = first.ExtFields["k"]
	mem := &first.frame[0]
	r.Recycle(first)
	if first.Body != nil || first.frame != nil {
		t.Fatal("Recycle left the command its memory")
	}
	second, err := r.ReadCommand()
	if err != nil {
		t.Fatal(err)
	}
	if &second.frame[0] != mem {
		t.Fatal("the second frame did not reuse the first one's memory")
	}
	if string(second.Body) != "second" || h.k != "first body" {
		t.Fatalf("second body %q, first's field %q", second.Body, h.k)
	}
	// A frame larger than the recycled one gets memory of its own.
	r.Recycle(second)
	third, err := r.ReadCommand()
	if err != nil || string(third.Body) != "a third body, longer than the others" {
		t.Fatalf("%v %q", err, third.Body)
	}
	r.Recycle(&Command{}) // not from a Reader: nothing happens
}
