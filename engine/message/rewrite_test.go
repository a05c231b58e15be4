package message

import (
	"bytes"
	"errors"
	"maps"
	"strings"
	"testing"
)

// rewritten returns what m decodes to after AppendRewritten with r: the
// topic, queue and properties changed, everything else as m was stored.
func rewritten(m *Message, r *Rewrite) map[string]string {
	props := maps.Clone(m.Properties)
	for _, k := range r.Drop {
		delete(props, k)
	}
	for i := 0; i < len(r.Add); i += 2 {
		if props == nil {
			props = map[string]string{}
		}
		props[r.Add[i]] = r.Add[i+1]
	}
	if len(props) == 0 {
		return nil
	}
	return props
}

func TestAppendRewritten(t *testing.T) {
	rewrites := map[string]*Rewrite{
		"topic and queue only": {Topic: "RealTopic", QueueID: 5},
		"drop and add": {Topic: "R", QueueID: 0,
			Drop: []string{PropertyTags, PropertyKeys, "ABSENT"},
			Add:  []string{PropertyKeys, "new keys", "TIMER_SRC", "1700000000000,4096"}},
		"empty topic, drop everything": {Topic: "", QueueID: -1,
			Drop: []string{PropertyTags, PropertyKeys, PropertyUniqKey, PropertyWait, "P"}},
	}
	for name, m := range storedMessages() {
		rec := mustAppend(t, m)
		orig, _, err := DecodeStored(rec)
		if err != nil {
			t.Fatal(err)
		}
		for rname, r := range rewrites {
			t.Run(name+"/"+rname, func(t *testing.T) {
				prefix := []byte("prefix")
				out, err := AppendRewritten(prefix, rec, r)
				if name == "max topic and properties" && len(r.Add) > 0 && !slicesHas(r.Drop, "P") {
					if !errors.Is(err, ErrPropertiesTooLarge) || !bytes.Equal(out, prefix) {
						t.Fatalf("full properties plus more: %v, %d bytes", err, len(out))
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(out[:len(prefix)], prefix) {
					t.Fatal("prefix changed")
				}
				got, n, err := DecodeStored(out[len(prefix):])
				if err != nil || n != len(out)-len(prefix) {
					t.Fatalf("decode the copy: %d of %d bytes, %v", n, len(out)-len(prefix), err)
				}
				want := *orig
				want.Topic, want.QueueID = r.Topic, r.QueueID
				want.Properties = rewritten(orig, r)
				want.StoreSize = int32(n)
				if d := diffMessages(got, &want); d != "" {
					t.Fatalf("copy differs: %s", d)
				}
			})
		}
	}
}

func slicesHas(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestAppendRewrittenKeepsPieces(t *testing.T) {
	tests := []struct {
		name, props, want string
	}{
		{"missing final separator", "a\x011\x02b\x012", "a\x011\x02b\x012\x02"},
		{"not pairs are kept", "\x02junk\x02a\x011\x02x\x01y\x01z\x02", "\x02junk\x02a\x011\x02x\x01y\x01z\x02"},
		{"every occurrence dropped", "d\x011\x02a\x011\x02d\x012\x02", "a\x011\x02"},
		{"empty value dropped", "d\x01\x02a\x01\x02", "a\x01\x02"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := sampleMessage()
			m.Properties = nil
			rec := mustAppend(t, m)
			rec = setRawProperties(rec, tt.props)
			out, err := AppendRewritten(nil, rec, &Rewrite{Topic: "T", Drop: []string{"d"}})
			if err != nil {
				t.Fatal(err)
			}
			h, err := PeekStored(out)
			if err != nil || string(h.Properties) != tt.want {
				t.Fatalf("properties %q, %v; want %q", h.Properties, err, tt.want)
			}
		})
	}
}

// setRawProperties returns rec, a record with no properties, with the
// encoded properties string props.
func setRawProperties(rec []byte, props string) []byte {
	out := append(bytes.Clone(rec[:len(rec)-2]), byte(len(props)>>8), byte(len(props)))
	out = append(out, props...)
	be.PutUint32(out, uint32(len(out)))
	return out
}

func TestAppendRewrittenErrors(t *testing.T) {
	rec := mustAppend(t, sampleMessage())
	full := sampleMessage()
	full.Properties = map[string]string{"P": strings.Repeat("v", MaxPropertiesSize-3)}
	fullRec := mustAppend(t, full)
	tests := []struct {
		name string
		rec  []byte
		r    Rewrite
		want error
	}{
		{"malformed record", rec[:len(rec)-1], Rewrite{Topic: "T"}, ErrMalformed},
		{"topic too long", rec, Rewrite{Topic: strings.Repeat("t", MaxTopicLength+1)}, ErrInvalidName},
		{"odd add", rec, Rewrite{Topic: "T", Add: []string{"k"}}, ErrInvalidProperty},
		{"empty name", rec, Rewrite{Topic: "T", Add: []string{"", "v"}}, ErrInvalidProperty},
		{"separator in name", rec, Rewrite{Topic: "T", Add: []string{"k\x01", "v"}}, ErrInvalidProperty},
		{"separator in value", rec, Rewrite{Topic: "T", Add: []string{"k", "v\x02"}}, ErrInvalidProperty},
		{"properties too large", fullRec, Rewrite{Topic: "T", Add: []string{"k", "v"}}, ErrPropertiesTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("keep")
			out, err := AppendRewritten(dst, tt.rec, &tt.r)
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if string(out) != "keep" {
				t.Fatalf("dst changed to %d bytes", len(out))
			}
		})
	}
}

func TestSetTransaction(t *testing.T) {
	for name, m := range storedMessages() {
		t.Run(name, func(t *testing.T) {
			rec := mustAppend(t, m)
			SetTransaction(rec, SysFlagTransactionCommit, 987654)
			got, _, err := DecodeStored(rec)
			if err != nil {
				t.Fatal(err)
			}
			want, _, _ := DecodeStored(mustAppend(t, m))
			want.SysFlag = WithTransactionType(want.SysFlag, SysFlagTransactionCommit)
			want.PreparedTransactionOffset = 987654
			if d := diffMessages(got, want); d != "" {
				t.Fatal(d)
			}
		})
	}
}

func TestNextPropertyAgreesWithLookup(t *testing.T) {
	for _, props := range []string{"", "a\x011\x02a\x012\x02", "\x02\x02k\x01v", "x\x01y\x01z\x02k\x01\x02", "\x01v\x02k\x01w\x02"} {
		last := map[string]string{}
		for b := []byte(props); len(b) > 0; {
			var k, v []byte
			var ok bool
			if k, v, b, ok = NextProperty(b); ok {
				last[string(k)] = string(v)
			}
		}
		want, _ := DecodeProperties([]byte(props))
		if len(want) != len(last) {
			t.Fatalf("%q: NextProperty sees %v, DecodeProperties %v", props, last, want)
		}
		for k, v := range want {
			if last[k] != v {
				t.Fatalf("%q: NextProperty sees %v, DecodeProperties %v", props, last, want)
			}
		}
	}
}

func TestAppendRewrittenAllocs(t *testing.T) {
	rec := mustAppend(t, sampleMessage())
	r := &Rewrite{Topic: "Real", QueueID: 3, Drop: []string{PropertyTags}, Add: []string{"TRAN_SRC", "12345"}}
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(1000, func() {
		var err error
		if buf, err = AppendRewritten(buf[:0], rec, r); err != nil {
			t.Fatal(err)
		}
		SetTransaction(buf, SysFlagTransactionCommit, 1)
	}); n != 0 {
		t.Errorf("AppendRewritten + SetTransaction: %v allocs, want 0", n)
	}
}

func FuzzAppendRewritten(f *testing.F) {
	for _, m := range storedMessages() {
		if len(m.Body) < 4096 {
			f.Add(mustAppend(f, m), "NewTopic", "TAGS", "K", "v")
		}
	}
	f.Fuzz(func(t *testing.T, b []byte, topic, drop, addK, addV string) {
		r := &Rewrite{Topic: topic, QueueID: 7, Drop: []string{drop}, Add: []string{addK, addV}}
		out, err := AppendRewritten(nil, b, r)
		orig, _, derr := DecodeStored(b)
		switch {
		case derr != nil:
			if err == nil {
				t.Fatalf("rewrote a record that does not decode: %v", derr)
			}
			return
		case len(topic) > MaxTopicLength || addK == "" || hasSeparator(addK) || hasSeparator(addV):
			if err == nil {
				t.Fatal("invalid rewrite accepted")
			}
			return
		case errors.Is(err, ErrPropertiesTooLarge):
			return
		case err != nil:
			t.Fatalf("rewrite of a valid record: %v", err)
		}
		got, n, err := DecodeStored(out)
		if err != nil || n != len(out) {
			t.Fatalf("the copy does not decode: %d of %d, %v", n, len(out), err)
		}
		want := *orig
		want.Topic, want.QueueID = topic, 7
		want.Properties = rewritten(orig, r)
		want.StoreSize = int32(n)
		if d := diffMessages(got, &want); d != "" {
			t.Fatalf("copy differs: %s", d)
		}
	})
}
