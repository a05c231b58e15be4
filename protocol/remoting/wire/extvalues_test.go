package wire

import (
	"encoding/binary"
	"slices"
	"testing"
)

// TestExtValues: ExtField and AppendExtValues read deferred extFields in
// place and agree with the loaded map, repeated keys and escapes
// included.
func TestExtValues(t *testing.T) {
	testExtValues(t)
	// In key order, as the Go client writes them (the values are taken
	// as they come), and in key order but for a repeated key.
	for _, tc := range []struct{ ext, want string }{
		{`{"AccessKey":"ak","Signature":"sig","a":"1","b":"x\"y","topic":"T"}`, "ak1x\"yT"},
		{`{"AccessKey":"ak","Signature":"sig","a":"1","a":"2","b":"3"}`, "ak23"},
		{`{"AccessKey":"ak","a":"1","b":"3","a":"2"}`, "ak23"},
		{`{"b":"2","a":"1"}`, "12"},
		{`{}`, ""},
	} {
		hdr := []byte(`{"code":10,"flag":0,"language":"GO","opaque":1,"version":317,"extFields":` + tc.ext + `}`)
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(hdr)))
		c, err := DecodeOptions{DeferExtFields: true}.Decode(append(frame, hdr...))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(c.AppendExtValues(nil, "Signature")); got != tc.want {
			t.Errorf("%s: AppendExtValues = %q, want %q", tc.ext, got, tc.want)
		}
	}
}

func testExtValues(t *testing.T) {
	hdr := []byte(`{"code":10,"flag":0,"language":"GO","opaque":1,"serializeTypeCurrentRPC":"JSON","version":317,` +
		`"extFields":{"topic":"T","b":"x\"y","AccessKey":"ak","a":"first","Signature":"sig","a":"second","n":7}}`)
	for _, deferExt := range []bool{true, false} {
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(hdr)))
		frame = append(frame, hdr...)
		c, err := DecodeOptions{DeferExtFields: deferExt}.Decode(frame)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.ExtField("a"); got != "second" {
			t.Errorf("defer %v: ExtField(a) = %q", deferExt, got)
		}
		if got := c.ExtField("missing"); got != "" {
			t.Errorf("defer %v: ExtField(missing) = %q", deferExt, got)
		}
		got := string(c.AppendExtValues([]byte(">"), "Signature"))
		// Keys in byte order: AccessKey a b n topic.
		if want := ">aksecondx\"y7T"; got != want {
			t.Errorf("defer %v: AppendExtValues = %q, want %q", deferExt, got, want)
		}
		c.LoadExtFields()
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range c.ExtFields {
				if !yield(k) {
					return
				}
			}
		})
		if len(keys) != 6 {
			t.Errorf("defer %v: loaded %v", deferExt, keys)
		}
	}
}
