package message

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
)

func TestPropertyAccessors(t *testing.T) {
	var m Message
	if got := m.Property("X"); got != "" {
		t.Errorf("Property on nil map = %q", got)
	}
	m.ClearProperty("X") // no panic on a nil map
	m.SetProperty("X", "1")
	if got := m.Property("X"); got != "1" {
		t.Errorf("Property(X) = %q, want 1", got)
	}
	m.ClearProperty("X")
	if _, ok := m.Properties["X"]; ok {
		t.Error("ClearProperty left the property")
	}
}

func TestEncodedPropertyAccessors(t *testing.T) {
	m := Message{EncodedProperties: []byte("TAGS\x01red\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01ID1\x02DELAY\x013\x02TRAN_MSG\x01TRUE\x02EMPTY\x01\x02")}
	if m.Tags() != "red" || m.UniqKey() != "ID1" || !slices.Equal(m.Keys(), []string{"k1", "k2"}) || !m.IsTransactionPrepared() {
		t.Fatalf("accessors read %q %q %q %v", m.Tags(), m.UniqKey(), m.Keys(), m.IsTransactionPrepared())
	}
	if l, err := m.DelayLevel(); l != 3 || err != nil {
		t.Fatalf("DelayLevel = %d, %v", l, err)
	}
	if v, ok := m.LookupProperty("EMPTY"); v != "" || !ok {
		t.Fatalf("LookupProperty(EMPTY) = %q, %v", v, ok)
	}
	if _, ok := m.LookupProperty("MISSING"); ok {
		t.Fatal("LookupProperty found a missing property")
	}
	// A setter decodes the encoded properties first, keeping them all.
	m.SetProperty("X", "1")
	if m.EncodedProperties != nil || len(m.Properties) != 7 || m.Tags() != "red" || m.Property("X") != "1" {
		t.Fatalf("after SetProperty: %v, encoded %q", m.Properties, m.EncodedProperties)
	}
	m = Message{EncodedProperties: []byte("TAGS\x01red\x02")}
	m.ClearProperty("TAGS")
	if m.EncodedProperties != nil || len(m.Properties) != 0 {
		t.Fatalf("after ClearProperty: %v, encoded %q", m.Properties, m.EncodedProperties)
	}
}

func TestTagsKeysUniqKey(t *testing.T) {
	var m Message
	if m.Tags() != "" || m.Keys() != nil || m.UniqKey() != "" {
		t.Fatal("zero Message has tags, keys or a uniq key")
	}
	m.SetTags("tagA")
	m.SetUniqKey("ID1")
	m.SetKeys([]string{"k1", "k2"})
	if m.Tags() != "tagA" || m.Property(PropertyTags) != "tagA" {
		t.Errorf("Tags = %q", m.Tags())
	}
	if m.UniqKey() != "ID1" || m.Property(PropertyUniqKey) != "ID1" {
		t.Errorf("UniqKey = %q", m.UniqKey())
	}
	if got := m.Property(PropertyKeys); got != "k1 k2" {
		t.Errorf("KEYS = %q, want %q", got, "k1 k2")
	}
	if got := m.Keys(); !slices.Equal(got, []string{"k1", "k2"}) {
		t.Errorf("Keys = %q", got)
	}
	m.SetProperty(PropertyKeys, " a  b ")
	if got := m.Keys(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Keys of %q = %q", " a  b ", got)
	}
	m.SetTags("")
	m.SetKeys(nil)
	m.SetUniqKey("")
	if len(m.Properties) != 0 {
		t.Errorf("clearing setters left %v", m.Properties)
	}
}

func TestID(t *testing.T) {
	m := Message{StoreHost: netip.MustParseAddrPort("192.168.0.10:10911")}
	if got, want := m.ID(), "C0A8000A00002A9F0000000000000000"; got != want {
		t.Errorf("ID without UNIQ_KEY = %s, want %s", got, want)
	}
	m.SetUniqKey("7F0000010001000000009a1af5500001")
	if got := m.ID(); got != "7F0000010001000000009a1af5500001" {
		t.Errorf("ID with UNIQ_KEY = %s", got)
	}
}

func TestDelayLevel(t *testing.T) {
	tests := []struct {
		val     string
		set     bool
		want    int
		wantErr bool
	}{
		{set: false, want: 0},
		{val: "3", set: true, want: 3},
		{val: "-1", set: true, want: -1},
		{val: "18", set: true, want: 18},
		{val: "x", set: true, wantErr: true},
		{val: "", set: true, wantErr: true},
	}
	for _, tt := range tests {
		var m Message
		if tt.set {
			m.SetProperty(PropertyDelayLevel, tt.val)
		}
		got, err := m.DelayLevel()
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("DelayLevel(%q) = %d, %v; want %d, err %v", tt.val, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !errors.Is(err, ErrInvalidProperty) {
			t.Errorf("DelayLevel error %v does not wrap ErrInvalidProperty", err)
		}
	}
	var m Message
	m.SetDelayLevel(5)
	if got := m.Property(PropertyDelayLevel); got != "5" {
		t.Errorf("SetDelayLevel(5) wrote %q", got)
	}
	m.SetDelayLevel(0)
	if _, ok := m.Properties[PropertyDelayLevel]; ok {
		t.Error("SetDelayLevel(0) kept the property")
	}
}

func TestIsTransactionPrepared(t *testing.T) {
	for val, want := range map[string]bool{"true": true, "TRUE": true, "True": true, "false": false, "": false, "1": false} {
		m := Message{Properties: map[string]string{PropertyTransactionPrepared: val}}
		if got := m.IsTransactionPrepared(); got != want {
			t.Errorf("IsTransactionPrepared(%q) = %v, want %v", val, got, want)
		}
	}
	if (&Message{}).IsTransactionPrepared() {
		t.Error("zero Message is a prepared transaction")
	}
}

func TestTransactionType(t *testing.T) {
	tests := []struct {
		sys, want int32
	}{
		{0, SysFlagTransactionNone},
		{SysFlagCompressed | SysFlagTransactionPrepared, SysFlagTransactionPrepared},
		{SysFlagTransactionCommit | SysFlagBornHostV6, SysFlagTransactionCommit},
		{SysFlagTransactionRollback, SysFlagTransactionRollback},
	}
	for _, tt := range tests {
		if got := TransactionType(tt.sys); got != tt.want {
			t.Errorf("TransactionType(%#x) = %#x, want %#x", tt.sys, got, tt.want)
		}
	}
	sys := SysFlagCompressed | SysFlagTransactionPrepared | SysFlagStoreHostV6
	got := WithTransactionType(sys, SysFlagTransactionCommit)
	if want := SysFlagCompressed | SysFlagTransactionCommit | SysFlagStoreHostV6; got != want {
		t.Errorf("WithTransactionType = %#x, want %#x", got, want)
	}
	if got := WithTransactionType(SysFlagTransactionRollback, SysFlagTransactionNone); got != 0 {
		t.Errorf("WithTransactionType(rollback, none) = %#x", got)
	}
}
