package filter

import (
	"errors"
	"reflect"
	"testing"
)

// fuzzProps are the messages every parsed expression is matched against.
var fuzzProps = []PropertyMap{
	{},
	{"a": "5", "b": "x", "c": "true", "TAGS": "TagA"},
	{"a": "x", "b": "5", "c": "-1.5"},
	{"a": "", "b": "", "c": "", "TAGS": ""},
}

// FuzzParseSQL checks that ParseSQL never panics, refuses only with a
// *SyntaxError, and that the canonical form of what it accepts reads back
// as the same tree and the same filter.
func FuzzParseSQL(f *testing.F) {
	for _, tc := range sqlCases {
		f.Add(tc.expr)
	}
	f.Fuzz(func(t *testing.T, expression string) {
		q, err := ParseSQL(expression)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || !errors.Is(err, ErrSyntax) || se.Pos < 1 {
				t.Fatalf("ParseSQL(%q) = %v, want a *SyntaxError", expression, err)
			}
			return
		}
		text := q.String()
		q2, err := ParseSQL(text)
		if err != nil {
			t.Fatalf("ParseSQL(%q) succeeded, but its canonical form %q: %v", expression, text, err)
		}
		if !reflect.DeepEqual(q.Expr(), q2.Expr()) {
			t.Fatalf("%q: canonical form %q is another tree", expression, text)
		}
		if q2.String() != text {
			t.Fatalf("%q: canonical form %q reads back as %q", expression, text, q2.String())
		}
		for _, p := range fuzzProps {
			if q.Match(p) != q2.Match(p) {
				t.Fatalf("%q and its canonical form %q differ on %v", expression, text, p)
			}
		}
	})
}
