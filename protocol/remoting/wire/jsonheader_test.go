package wire

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// skipPlainByByte is skipPlain one byte at a time.
func skipPlainByByte(d []byte, i int) int {
	for i < len(d) && plainByte[d[i]] {
		i++
	}
	return i
}

// TestSkipPlain checks the eight-bytes-at-a-time scan against the plain
// one: every byte value at every position of a word and its tail, and
// random mixes of special bytes.
func TestSkipPlain(t *testing.T) {
	for v := range 256 {
		for at := range 20 {
			d := bytes.Repeat([]byte{'a'}, 20)
			d[at] = byte(v)
			for from := range len(d) + 1 {
				if got, want := skipPlain(d, from), skipPlainByByte(d, from); got != want {
					t.Fatalf("byte %#x at %d, from %d: %d, want %d", v, at, from, got, want)
				}
			}
		}
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	special := []byte{0, 0x1f, 0x20, '"', '\\', 0x7f, 0x80, 0xff, 'a'}
	for range 20000 {
		d := make([]byte, rnd.IntN(40))
		for i := range d {
			if rnd.IntN(4) == 0 {
				d[i] = special[rnd.IntN(len(special))]
			} else {
				d[i] = byte(0x20 + rnd.IntN(0x60))
			}
		}
		from := rnd.IntN(len(d) + 1)
		if got, want := skipPlain(d, from), skipPlainByByte(d, from); got != want {
			t.Fatalf("%q from %d: %d, want %d", d, from, got, want)
		}
	}
}

// TestInternName checks that cached names come back equal, whatever
// shares their slot, and that a name seen before costs no allocation.
func TestInternName(t *testing.T) {
	names := make([]string, 5000) // more than the table's slots
	for i := range names {
		names[i] = "topic-" + itoa(i)
	}
	for range 2 {
		for _, n := range names {
			if got := internName([]byte(n)); got != n {
				t.Fatalf("internName(%q) = %q", n, got)
			}
		}
	}
	b := []byte("BenchTopic")
	internName(b)
	if n := testing.AllocsPerRun(100, func() { internName(b) }); n != 0 {
		t.Fatalf("%v allocations for a cached name", n)
	}
}

// TestDecodeSendHeaderAllocs checks what a broker's decoding of a Go
// client's send costs in allocations: the command, and now and then the
// optional maxReconsumeTimes.
func TestDecodeSendHeaderAllocs(t *testing.T) {
	frame := goClientFrame(t, "send.bin")
	o := DecodeOptions{DeferExtFields: true}
	props := make([]byte, 0, 256)
	n := testing.AllocsPerRun(200, func() {
		c, err := o.Decode(frame)
		if err != nil {
			t.Fatal(err)
		}
		var h SendMessageRequestHeader
		if props, err = c.DecodeSendHeader(&h, props[:0]); err != nil {
			t.Fatal(err)
		}
	})
	if n > 2 {
		t.Fatalf("%v allocations per send header, want at most 2", n)
	}
}
