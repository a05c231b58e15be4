package pop

import (
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestTailMatchesStdlib checks the fixed-size coders against
// encoding/base64 on random and edge-case bytes.
func TestTailMatchesStdlib(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	inputs := [][rawLen]byte{{}, {}}
	for i := range rawLen {
		inputs[1][i] = 0xff
	}
	for range 1000 {
		var raw [rawLen]byte
		for i := range raw {
			raw[i] = byte(r.Uint32())
		}
		inputs = append(inputs, raw)
	}
	for _, raw := range inputs {
		var tail [tailLen]byte
		encodeTail(&tail, &raw)
		if want := base64.RawURLEncoding.EncodeToString(raw[:]); string(tail[:]) != want {
			t.Fatalf("encodeTail(%x) = %q, want %q", raw, tail, want)
		}
		var back [rawLen]byte
		if !decodeTail(&back, string(tail[:])) || back != raw {
			t.Fatalf("decodeTail(%q) = %x, want %x", tail, back, raw)
		}
	}
}

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// TestDecodeTailRefuses checks that decodeTail accepts a byte at a
// position exactly when encodeTail can write it there.
func TestDecodeTailRefuses(t *testing.T) {
	var raw [rawLen]byte
	var tail [tailLen]byte
	encodeTail(&tail, &raw)
	for i := range tailLen {
		for c := range 256 {
			text := []byte(string(tail[:]))
			text[i] = byte(c)
			pos := strings.IndexByte(alphabet, byte(c))
			valid := pos >= 0 && (i < tailLen-1 || pos&3 == 0)
			var got [rawLen]byte
			if ok := decodeTail(&got, string(text)); ok != valid {
				t.Fatalf("decodeTail(%q) = %v, want %v", text, ok, valid)
			}
		}
	}
	for _, n := range []int{0, 1, tailLen - 1, tailLen + 1} {
		var got [rawLen]byte
		if decodeTail(&got, strings.Repeat("A", n)) {
			t.Fatalf("decodeTail accepts %d characters", n)
		}
	}
}
