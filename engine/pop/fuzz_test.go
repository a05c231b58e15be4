package pop

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzDecodeHandle decodes arbitrary text as a receipt handle: as given,
// with a valid version-1 MAC appended, and completed with a valid
// version-2 MAC (so the checks behind the MAC run too). Decode must not
// panic, must fail only with ErrInvalidHandle, and any text it accepts
// must be exactly the text its version's encoder writes for the decoded
// handle.
func FuzzDecodeHandle(f *testing.F) {
	s := NewSigner(testKey)
	f.Add(s.Encode(typical, "G"), "G")
	f.Add(encodeV1(s, typical, "G"), "G")
	f.Add("1 T 3 5 7 9", "G")
	f.Add("1 T +3 05 7 -0", "G")
	f.Add("2 T AAAAAwAAAAAAADA5AAAATQAAAYvP5WgA", "G")
	f.Add("garbage", "")
	f.Fuzz(func(t *testing.T, text, group string) {
		check := func(text string) {
			h, err := s.Decode(text, group)
			if err != nil {
				if !errors.Is(err, ErrInvalidHandle) {
					t.Fatalf("Decode(%q) = %v, want ErrInvalidHandle", text, err)
				}
				return
			}
			again := s.Encode(h, group)
			if text[0] == '1' {
				again = encodeV1(s, h, group)
			}
			if again != text {
				t.Fatalf("Decode(%q) = %+v, which encodes as %q", text, h, again)
			}
		}
		check(text)
		check(sign(s, text, group))
		check(signV2(s, text, group))
	})
}

// FuzzUnmarshalQueue decodes arbitrary bytes as queue state. It must not
// panic, must fail only with ErrCorruptState, and what it accepts must
// encode to bytes that decode to the same state and encode the same again.
func FuzzUnmarshalQueue(f *testing.F) {
	for _, q := range []*Queue{
		NewQueue(0),
		queueOf(10, 15, map[int64]*Inflight{
			12: {Deadline: 1_700_000_000_000, Attempt: 2, Nonce: 9, Group: "order 1", AttemptID: "a b"},
			14: {Deadline: 5, Attempt: 1},
		}, 11, 13),
	} {
		b, _ := q.MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte{0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		var q Queue
		if err := q.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, ErrCorruptState) {
				t.Fatalf("UnmarshalBinary(%x) = %v, want ErrCorruptState", data, err)
			}
			return
		}
		b, err := q.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var q2 Queue
		if err := q2.UnmarshalBinary(b); err != nil {
			t.Fatalf("re-encoded state %x does not decode: %v", b, err)
		}
		if !reflect.DeepEqual(&q, &q2) {
			t.Fatalf("state changed on re-encoding: %+v, then %+v", q, q2)
		}
		if b2, _ := q2.MarshalBinary(); string(b2) != string(b) {
			t.Fatalf("encoding not stable: %x, then %x", b, b2)
		}
	})
}
