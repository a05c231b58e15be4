package message

import (
	"bytes"
	"errors"
	"maps"
	"strings"
	"testing"
)

func TestPropertiesRoundTrip(t *testing.T) {
	tests := []map[string]string{
		nil,
		{},
		{"TAGS": "a"},
		{"TAGS": "tagA", "KEYS": "k1 k2", "UNIQ_KEY": "C0A8000A00002A9F0000000000000000"},
		{"EMPTY": ""},
		{"unicode": "héllo wörld", "x": strings.Repeat("v", 1000)},
	}
	for _, p := range tests {
		if err := ValidateProperties(p); err != nil {
			t.Fatalf("ValidateProperties(%v) = %v", p, err)
		}
		enc := AppendProperties(nil, p)
		if len(enc) != PropertiesSize(p) {
			t.Errorf("len(AppendProperties(%v)) = %d, PropertiesSize = %d", p, len(enc), PropertiesSize(p))
		}
		got, err := DecodeProperties(enc)
		if err != nil {
			t.Fatalf("DecodeProperties: %v", err)
		}
		if !maps.Equal(got, p) {
			t.Errorf("round trip of %v = %v", p, got)
		}
		for k, v := range p {
			lv, ok := LookupProperty(enc, k)
			if !ok || string(lv) != v {
				t.Errorf("LookupProperty(%q) = %q, %v; want %q", k, lv, ok, v)
			}
		}
		if _, ok := LookupProperty(enc, "MISSING"); ok {
			t.Errorf("LookupProperty(MISSING) found a value in %q", enc)
		}
	}
}

func TestAppendPropertiesFormat(t *testing.T) {
	got := string(AppendProperties([]byte("prefix:"), map[string]string{"K": "V"}))
	if want := "prefix:K\x01V\x02"; got != want {
		t.Errorf("AppendProperties = %q, want %q", got, want)
	}
}

func TestDecodePropertiesClientRules(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"empty", "", nil},
		{"one pair", "a\x01b\x02", map[string]string{"a": "b"}},
		{"no trailing separator", "a\x01b", map[string]string{"a": "b"}},
		{"empty value", "a\x01\x02", map[string]string{"a": ""}},
		{"empty key skipped", "\x01b\x02c\x01d\x02", map[string]string{"c": "d"}},
		{"no name-value separator skipped", "abc\x02c\x01d\x02", map[string]string{"c": "d"}},
		{"two name-value separators skipped", "a\x01b\x01c\x02c\x01d\x02", map[string]string{"c": "d"}},
		{"empty pieces skipped", "\x02\x02a\x01b\x02\x02", map[string]string{"a": "b"}},
		{"last duplicate wins", "a\x011\x02a\x012\x02", map[string]string{"a": "2"}},
		{"only garbage", "xyz\x02\x01\x02", nil},
		{"only separators", "\x01\x01\x01", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeProperties([]byte(tt.in))
			if err != nil {
				t.Fatalf("DecodeProperties(%q): %v", tt.in, err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("DecodeProperties(%q) = %v, want %v", tt.in, got, tt.want)
			}
			// LookupProperty agrees with DecodeProperties on every key.
			for _, k := range []string{"a", "c", "", "b", "xyz"} {
				v, ok := LookupProperty([]byte(tt.in), k)
				wv, wok := tt.want[k]
				if ok != wok || string(v) != wv {
					t.Errorf("LookupProperty(%q, %q) = %q, %v; want %q, %v", tt.in, k, v, ok, wv, wok)
				}
			}
		})
	}
}

func TestValidateProperties(t *testing.T) {
	big := strings.Repeat("x", MaxPropertiesSize-3) // "k" 0x01 big 0x02 = MaxPropertiesSize
	tests := []struct {
		name string
		p    map[string]string
		want error
	}{
		{"nil", nil, nil},
		{"ok", map[string]string{"a": "b"}, nil},
		{"at limit", map[string]string{"k": big}, nil},
		{"over limit", map[string]string{"k": big + "x"}, ErrPropertiesTooLarge},
		{"many over limit", func() map[string]string {
			m := map[string]string{}
			for i := range 4000 {
				m[strings.Repeat("k", 1+i%7)+string(rune('a'+i%26))+strings.Repeat("z", i/182)] = "value"
			}
			return m
		}(), ErrPropertiesTooLarge},
		{"empty key", map[string]string{"": "b"}, ErrInvalidProperty},
		{"0x01 in key", map[string]string{"a\x01": "b"}, ErrInvalidProperty},
		{"0x02 in key", map[string]string{"a\x02": "b"}, ErrInvalidProperty},
		{"0x01 in value", map[string]string{"a": "b\x01"}, ErrInvalidProperty},
		{"0x02 in value", map[string]string{"a": "\x02b"}, ErrInvalidProperty},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateProperties(tt.p)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("ValidateProperties = %v, want %v", err, tt.want)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "message: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
}

func TestLookupPropertyAllocs(t *testing.T) {
	enc := AppendProperties(nil, map[string]string{
		PropertyTags: "tagA", PropertyKeys: "k1 k2", PropertyUniqKey: "C0A8000A00002A9F0000000000000000",
	})
	var sink []byte
	allocs := testing.AllocsPerRun(1000, func() {
		sink, _ = LookupProperty(enc, PropertyUniqKey)
	})
	if allocs != 0 {
		t.Errorf("LookupProperty: %v allocs, want 0", allocs)
	}
	_ = sink
}

func TestAppendPropertiesAllocs(t *testing.T) {
	p := map[string]string{PropertyTags: "tagA", PropertyKeys: "k1 k2"}
	buf := make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(1000, func() {
		buf = AppendProperties(buf[:0], p)
	})
	if allocs != 0 {
		t.Errorf("AppendProperties: %v allocs, want 0", allocs)
	}
}

func FuzzDecodeProperties(f *testing.F) {
	f.Add([]byte("TAGS\x01tagA\x02KEYS\x01k1 k2\x02"))
	f.Add([]byte("\x01\x02\x01\x01\x02"))
	f.Add([]byte("a\x01b"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodeProperties(b)
		if err != nil {
			t.Fatalf("DecodeProperties: %v", err)
		}
		// Everything decoded is encodable and decodes back to itself.
		for k, v := range p {
			if k == "" || hasSeparator(k) || hasSeparator(v) {
				t.Fatalf("decoded unencodable pair %q=%q", k, v)
			}
			lv, ok := LookupProperty(b, k)
			if !ok || string(lv) != v {
				t.Fatalf("LookupProperty(%q) = %q, %v; DecodeProperties has %q", k, lv, ok, v)
			}
		}
		enc := AppendProperties(nil, p)
		if len(enc) > len(b)+1 {
			t.Fatalf("re-encoding grew from %d to %d bytes", len(b), len(enc))
		}
		p2, err := DecodeProperties(enc)
		if err != nil {
			t.Fatalf("DecodeProperties(re-encoded): %v", err)
		}
		if !maps.Equal(p, p2) {
			t.Fatalf("re-encoded properties decode to %v, want %v", p2, p)
		}
	})
}

func TestCheckEncodedProperties(t *testing.T) {
	tests := []struct {
		in   string
		want error
	}{
		{"", nil},
		{"TAGS\x01a\x02", nil},
		{"TAGS\x01a\x02KEYS\x01k1 k2\x02EMPTY\x01\x02", nil},
		{"A\x011\x02A\x012\x02", nil}, // a repeated name: readers take the later value
		{"TAGS\x01a", ErrInvalidProperty},
		{"\x02", ErrInvalidProperty},
		{"A\x011\x02\x02", ErrInvalidProperty},
		{"A\x02", ErrInvalidProperty},
		{"\x01v\x02", ErrInvalidProperty},
		{"A\x011\x011\x02", ErrInvalidProperty},
		{"K\x01" + strings.Repeat("v", MaxPropertiesSize) + "\x02", ErrPropertiesTooLarge},
	}
	for _, tt := range tests {
		if err := CheckEncodedProperties([]byte(tt.in)); !errors.Is(err, tt.want) {
			t.Errorf("CheckEncodedProperties(%q) = %v, want %v", tt.in, err, tt.want)
		}
	}
}

func FuzzCheckEncodedProperties(f *testing.F) {
	f.Add([]byte("TAGS\x01tagA\x02KEYS\x01k1 k2\x02"))
	f.Add([]byte("A\x011\x02A\x012\x02"))
	f.Add([]byte("\x01\x02\x01\x01\x02"))
	f.Add([]byte("a\x01b"))
	f.Fuzz(func(t *testing.T, b []byte) {
		// The same rule, written another way: b ends with 0x02 and every
		// piece before it is a non-empty name, one 0x01 and a value.
		want := len(b) <= MaxPropertiesSize
		if len(b) > 0 {
			want = want && b[len(b)-1] == propertySeparator
			for _, piece := range bytes.Split(b[:len(b)-1], []byte{propertySeparator}) {
				name, value, found := bytes.Cut(piece, []byte{nameValueSeparator})
				want = want && found && len(name) > 0 && !bytes.ContainsRune(value, nameValueSeparator)
			}
		}
		err := CheckEncodedProperties(b)
		if (err == nil) != want {
			t.Fatalf("CheckEncodedProperties(%q) = %v, want ok %v", b, err, want)
		}
		if err != nil {
			return
		}
		// Such a string is its pairs written in order, and decodes to
		// them with later values winning.
		p, _ := DecodeProperties(b)
		var again []byte
		for rest := b; len(rest) > 0; {
			var k, v []byte
			var ok bool
			if k, v, rest, ok = NextProperty(rest); !ok {
				t.Fatalf("%q: NextProperty found a piece that is not a pair", b)
			}
			if lv, _ := LookupProperty(b, string(k)); p[string(k)] != string(lv) {
				t.Fatalf("%q: DecodeProperties has %q=%q, LookupProperty %q", b, k, p[string(k)], lv)
			}
			again = append(again, k...)
			again = append(again, nameValueSeparator)
			again = append(again, v...)
			again = append(again, propertySeparator)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("%q: its pairs write %q", b, again)
		}
	})
}
