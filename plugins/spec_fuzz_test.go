package plugins

import (
	"errors"
	"testing"
)

// FuzzParseSpec checks that ParseSpec never panics, errs only with
// ErrSpec, and that a spec it accepts prints to one it reads back the same.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"a=/p", "a=/p,k=v,x=", "a=/p,sha256=" + "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", "a=/p,timeout=1s,on-failure=skip,from=end", "=", "a=,", "a=/p,k=1,k=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := ParseSpec(s)
		if err != nil {
			if !errors.Is(err, ErrSpec) {
				t.Fatalf("ParseSpec(%q): %v does not match ErrSpec", s, err)
			}
			return
		}
		again, err := ParseSpec(sp.String())
		if err != nil || again.String() != sp.String() {
			t.Fatalf("ParseSpec(%q).String() = %q reads back as %q, %v", s, sp.String(), again.String(), err)
		}
	})
}
