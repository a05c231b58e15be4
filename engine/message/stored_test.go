package message

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"net/netip"
	"strings"
	"testing"
)

func sampleMessage() *Message {
	return &Message{
		Topic:   "TopicTest",
		Body:    []byte("Hello RocketMQ"),
		Flag:    7,
		SysFlag: SysFlagMultiTags,
		Properties: map[string]string{
			PropertyTags:    "TagA",
			PropertyKeys:    "k1 k2",
			PropertyUniqKey: "7F0000010001000000009A1AF5500001",
			PropertyWait:    "true",
		},
		BornTimestamp:             1_700_000_000_000,
		BornHost:                  netip.MustParseAddrPort("10.0.0.5:52311"),
		ReconsumeTimes:            2,
		QueueID:                   3,
		QueueOffset:               1234,
		CommitLogOffset:           987654321,
		StoreTimestamp:            1_700_000_000_123,
		StoreHost:                 netip.MustParseAddrPort("192.168.0.10:10911"),
		PreparedTransactionOffset: 42,
	}
}

// storedMessages are messages covering the format's variations.
func storedMessages() map[string]*Message {
	msgs := map[string]*Message{}
	msgs["ipv4"] = sampleMessage()

	m := sampleMessage()
	m.BornHost = netip.MustParseAddrPort("[2001:db8::5]:52311")
	m.StoreHost = netip.MustParseAddrPort("[2001:db8::10]:10911")
	msgs["ipv6"] = m

	m = sampleMessage()
	m.BornHost = netip.MustParseAddrPort("[2001:db8::5]:52311")
	msgs["ipv6 born ipv4 store"] = m

	m = sampleMessage()
	m.StoreHost = netip.MustParseAddrPort("[2001:db8::10]:10911")
	msgs["ipv4 born ipv6 store"] = m

	m = sampleMessage()
	m.BornHost = netip.MustParseAddrPort("[::ffff:10.0.0.5]:52311")
	msgs["ipv4-mapped born host"] = m

	m = sampleMessage()
	m.BornHost = netip.AddrPort{}
	m.StoreHost = netip.AddrPort{}
	msgs["invalid hosts"] = m

	m = sampleMessage()
	m.SysFlag = SysFlagCompressed | SysFlagTransactionPrepared
	m.Body = []byte{0x78, 0x9c, 0x01, 0x02, 0x03}
	msgs["compressed prepared"] = m

	m = sampleMessage()
	m.Body = nil
	m.Properties = nil
	msgs["empty body and properties"] = m

	msgs["zero"] = &Message{}

	m = sampleMessage()
	m.Topic = strings.Repeat("t", MaxTopicLength)
	m.Properties = map[string]string{"P": strings.Repeat("v", MaxPropertiesSize-3)}
	m.Body = bytes.Repeat([]byte{0xAB}, 1<<20)
	msgs["max topic and properties"] = m

	m = sampleMessage()
	m.QueueOffset, m.CommitLogOffset, m.BornTimestamp = -1, 1<<62, -5
	m.QueueID, m.Flag, m.ReconsumeTimes = -1, -1<<31, 1<<31-1
	msgs["extreme numbers"] = m
	return msgs
}

// normalized returns a copy of m as it reads back from a stored record:
// hosts in the form they are written, host bits derived from them, empty
// body and properties as nil, StoreSize and BodyCRC as given.
func normalized(m *Message, storeSize int32, crc uint32) Message {
	n := *m
	n.BornHost, n.StoreHost = normHost(m.BornHost), normHost(m.StoreHost)
	n.SysFlag &^= SysFlagBornHostV6 | SysFlagStoreHostV6
	if !n.BornHost.Addr().Is4() {
		n.SysFlag |= SysFlagBornHostV6
	}
	if !n.StoreHost.Addr().Is4() {
		n.SysFlag |= SysFlagStoreHostV6
	}
	if len(n.Body) == 0 {
		n.Body = nil
	}
	if len(n.Properties) == 0 {
		n.Properties = nil
	}
	n.StoreSize, n.BodyCRC = storeSize, crc
	return n
}

func normHost(a netip.AddrPort) netip.AddrPort {
	if !a.Addr().IsValid() {
		return netip.AddrPortFrom(netip.IPv4Unspecified(), a.Port())
	}
	return netip.AddrPortFrom(a.Addr().Unmap().WithZone(""), a.Port())
}

// diffMessages describes how got differs from want, or returns "".
func diffMessages(got, want *Message) string {
	var d []string
	check := func(field string, ok bool, g, w any) {
		if !ok {
			d = append(d, fmt.Sprintf("%s = %v, want %v", field, g, w))
		}
	}
	check("Topic", got.Topic == want.Topic, got.Topic, want.Topic)
	check("Body", bytes.Equal(got.Body, want.Body) && (got.Body == nil) == (want.Body == nil), len(got.Body), len(want.Body))
	check("Flag", got.Flag == want.Flag, got.Flag, want.Flag)
	check("SysFlag", got.SysFlag == want.SysFlag, got.SysFlag, want.SysFlag)
	check("Properties", maps.Equal(got.Properties, want.Properties) && (got.Properties == nil) == (want.Properties == nil), got.Properties, want.Properties)
	check("BornTimestamp", got.BornTimestamp == want.BornTimestamp, got.BornTimestamp, want.BornTimestamp)
	check("BornHost", got.BornHost == want.BornHost, got.BornHost, want.BornHost)
	check("ReconsumeTimes", got.ReconsumeTimes == want.ReconsumeTimes, got.ReconsumeTimes, want.ReconsumeTimes)
	check("QueueID", got.QueueID == want.QueueID, got.QueueID, want.QueueID)
	check("QueueOffset", got.QueueOffset == want.QueueOffset, got.QueueOffset, want.QueueOffset)
	check("CommitLogOffset", got.CommitLogOffset == want.CommitLogOffset, got.CommitLogOffset, want.CommitLogOffset)
	check("StoreTimestamp", got.StoreTimestamp == want.StoreTimestamp, got.StoreTimestamp, want.StoreTimestamp)
	check("StoreHost", got.StoreHost == want.StoreHost, got.StoreHost, want.StoreHost)
	check("PreparedTransactionOffset", got.PreparedTransactionOffset == want.PreparedTransactionOffset, got.PreparedTransactionOffset, want.PreparedTransactionOffset)
	check("StoreSize", got.StoreSize == want.StoreSize, got.StoreSize, want.StoreSize)
	check("BodyCRC", got.BodyCRC == want.BodyCRC, got.BodyCRC, want.BodyCRC)
	return strings.Join(d, "; ")
}

// diffRecords compares two stored records byte for byte, except that their
// properties strings only need to hold the same properties (map order
// varies between encodings).
func diffRecords(a, b []byte) string {
	ha, erra := PeekStored(a)
	hb, errb := PeekStored(b)
	if erra != nil || errb != nil {
		return fmt.Sprintf("PeekStored: %v, %v", erra, errb)
	}
	pa, pb := len(a)-len(ha.Properties), len(b)-len(hb.Properties)
	if !bytes.Equal(a[:pa], b[:pb]) {
		return fmt.Sprintf("records differ before the properties:\n% x\n% x", a[:pa], b[:pb])
	}
	ma, _ := DecodeProperties(ha.Properties)
	mb, _ := DecodeProperties(hb.Properties)
	if !maps.Equal(ma, mb) || len(ha.Properties) != len(hb.Properties) {
		return fmt.Sprintf("properties %q and %q differ", ha.Properties, hb.Properties)
	}
	return ""
}

func mustAppend(t testing.TB, m *Message) []byte {
	t.Helper()
	rec, err := AppendStored(nil, m)
	if err != nil {
		t.Fatalf("AppendStored: %v", err)
	}
	return rec
}

func TestStoredRoundTrip(t *testing.T) {
	for name, m := range storedMessages() {
		t.Run(name, func(t *testing.T) {
			orig := *m
			origProps := maps.Clone(m.Properties)
			prefix := []byte("prefix")
			rec, err := AppendStored(bytes.Clone(prefix), m)
			if err != nil {
				t.Fatalf("AppendStored: %v", err)
			}
			if !bytes.HasPrefix(rec, prefix) {
				t.Fatal("AppendStored overwrote dst")
			}
			rec = rec[len(prefix):]
			if m.SysFlag != orig.SysFlag || m.BornHost != orig.BornHost || !maps.Equal(m.Properties, origProps) {
				t.Fatal("AppendStored modified the message")
			}
			if want := StoredSize(m, PropertiesSize(m.Properties)); len(rec) != want {
				t.Errorf("record is %d bytes, StoredSize says %d", len(rec), want)
			}

			trailing := append(bytes.Clone(rec), 0xDE, 0xAD) // a following record's bytes
			got, n, err := DecodeStored(trailing)
			if err != nil {
				t.Fatalf("DecodeStored: %v", err)
			}
			if n != len(rec) {
				t.Errorf("DecodeStored consumed %d bytes, want %d", n, len(rec))
			}
			want := normalized(m, int32(len(rec)), crc32.ChecksumIEEE(m.Body)&0x7FFFFFFF)
			if d := diffMessages(got, &want); d != "" {
				t.Errorf("decoded message differs: %s", d)
			}
			clear(trailing)
			if !bytes.Equal(got.Body, want.Body) || got.Topic != want.Topic || !maps.Equal(got.Properties, want.Properties) {
				t.Error("decoded message aliases the input")
			}
			trailing = append(bytes.Clone(rec), 0xDE, 0xAD)

			h, err := PeekStored(trailing)
			if err != nil {
				t.Fatalf("PeekStored: %v", err)
			}
			if !h.VerifyBodyCRC() {
				t.Error("VerifyBodyCRC = false")
			}
			if h.TotalSize != int32(len(rec)) || h.QueueID != got.QueueID || h.QueueOffset != got.QueueOffset ||
				h.CommitLogOffset != got.CommitLogOffset || h.StoreTimestamp != got.StoreTimestamp ||
				h.SysFlag != got.SysFlag || h.BornHost != got.BornHost || h.StoreHost != got.StoreHost ||
				string(h.Topic) != got.Topic || !bytes.Equal(h.Body, got.Body) {
				t.Errorf("PeekStored header %+v disagrees with DecodeStored %+v", h, got)
			}
			if tag, _ := h.Property(PropertyTags); string(tag) != got.Tags() || h.TagHash() != TagHash(got.Tags()) {
				t.Errorf("Header tag %q/%d, message tag %q", tag, h.TagHash(), got.Tags())
			}
		})
	}
}

func TestStoredLayout(t *testing.T) {
	m := &Message{
		Topic:                     "T",
		Body:                      []byte("ab"),
		Flag:                      0x01020304,
		SysFlag:                   SysFlagCompressed | SysFlagBornHostV6 | SysFlagStoreHostV6, // host bits are recomputed
		Properties:                map[string]string{"K": "V"},
		BornTimestamp:             0x1112131415161718,
		BornHost:                  netip.MustParseAddrPort("1.2.3.4:258"),
		ReconsumeTimes:            0x21222324,
		QueueID:                   0x31323334,
		QueueOffset:               0x4142434445464748,
		CommitLogOffset:           0x5152535455565758,
		StoreTimestamp:            0x6162636465666768,
		StoreHost:                 netip.MustParseAddrPort("5.6.7.8:10911"),
		PreparedTransactionOffset: 0x7172737475767778,
	}
	rec := mustAppend(t, m)
	crc := crc32.ChecksumIEEE([]byte("ab")) & 0x7FFFFFFF
	var want []byte
	want = be.AppendUint32(want, uint32(MinStoredSize+2+1+4))
	want = be.AppendUint32(want, 0xDAA320A7)
	want = be.AppendUint32(want, crc)
	want = append(want, 0x31, 0x32, 0x33, 0x34)
	want = append(want, 0x01, 0x02, 0x03, 0x04)
	want = append(want, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48)
	want = append(want, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58)
	want = append(want, 0, 0, 0, 1) // SysFlag: only compressed
	want = append(want, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18)
	want = append(want, 1, 2, 3, 4, 0, 0, 1, 2)
	want = append(want, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68)
	want = append(want, 5, 6, 7, 8, 0, 0, 0x2A, 0x9F)
	want = append(want, 0x21, 0x22, 0x23, 0x24)
	want = append(want, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78)
	want = append(want, 0, 0, 0, 2, 'a', 'b')
	want = append(want, 1, 'T')
	want = append(want, 0, 4, 'K', 1, 'V', 2)
	if !bytes.Equal(rec, want) {
		t.Errorf("record\n got % x\nwant % x", rec, want)
	}
}

func TestStoredHostFlags(t *testing.T) {
	v4 := netip.MustParseAddrPort("1.2.3.4:1")
	v6 := netip.MustParseAddrPort("[::1]:1")
	tests := []struct {
		born, store netip.AddrPort
		in, want    int32
	}{
		{v4, v4, SysFlagBornHostV6 | SysFlagStoreHostV6, 0},
		{v6, v4, 0, SysFlagBornHostV6},
		{v4, v6, SysFlagCompressed, SysFlagCompressed | SysFlagStoreHostV6},
		{v6, v6, SysFlagInnerBatch, SysFlagInnerBatch | SysFlagBornHostV6 | SysFlagStoreHostV6},
	}
	for _, tt := range tests {
		rec := mustAppend(t, &Message{BornHost: tt.born, StoreHost: tt.store, SysFlag: tt.in})
		h, err := PeekStored(rec)
		if err != nil {
			t.Fatal(err)
		}
		if h.SysFlag != tt.want {
			t.Errorf("born %v store %v sysflag %#x: wrote %#x, want %#x", tt.born, tt.store, tt.in, h.SysFlag, tt.want)
		}
		if h.BornHost != tt.born || h.StoreHost != tt.store {
			t.Errorf("hosts read back as %v, %v", h.BornHost, h.StoreHost)
		}
	}
}

func TestAppendStoredErrors(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Message)
		want   error
	}{
		{"topic too long", func(m *Message) { m.Topic = strings.Repeat("t", MaxTopicLength+1) }, ErrInvalidName},
		{"properties too large", func(m *Message) {
			m.Properties = map[string]string{"P": strings.Repeat("v", MaxPropertiesSize-2)}
		}, ErrPropertiesTooLarge},
		{"separator in value", func(m *Message) { m.SetProperty("P", "a\x02b") }, ErrInvalidProperty},
		{"empty property name", func(m *Message) { m.SetProperty("", "v") }, ErrInvalidProperty},
		{"encoded properties without the final separator", func(m *Message) {
			m.Properties, m.EncodedProperties = nil, []byte("A\x011")
		}, ErrInvalidProperty},
		{"encoded properties too large", func(m *Message) {
			m.Properties, m.EncodedProperties = nil, []byte("P\x01"+strings.Repeat("v", MaxPropertiesSize)+"\x02")
		}, ErrPropertiesTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := sampleMessage()
			tt.modify(m)
			dst := []byte("keep")
			got, err := AppendStored(dst, m)
			if !errors.Is(err, tt.want) {
				t.Fatalf("AppendStored = %v, want %v", err, tt.want)
			}
			if string(got) != "keep" {
				t.Errorf("dst changed to %q on error", got)
			}
		})
	}
}

func TestAppendStoredEncodedProperties(t *testing.T) {
	m := sampleMessage()
	enc := []byte("TAGS\x01t\x02A\x011\x02A\x012\x02")
	m.Properties, m.EncodedProperties = nil, enc
	rec, err := AppendStored(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	h, err := PeekStored(rec)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h.Properties, enc) || int(h.TotalSize) != StoredSize(m, len(enc)) {
		t.Fatalf("stored properties %q (record of %d bytes), want %q as they are", h.Properties, h.TotalSize, enc)
	}
	got, _, err := DecodeStored(rec)
	if err != nil {
		t.Fatal(err)
	}
	if got.Tags() != "t" || got.Property("A") != "2" || len(got.Properties) != 2 {
		t.Fatalf("decoded properties %v", got.Properties)
	}
	// Properties, when set, win over the encoded form.
	m.Properties = map[string]string{"B": "3"}
	rec, err = AppendStored(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := PeekStored(rec); string(h.Properties) != "B\x013\x02" {
		t.Fatalf("stored properties %q, want those of the map", h.Properties)
	}
}

func TestDecodeStoredTruncated(t *testing.T) {
	for name, m := range storedMessages() {
		if len(m.Body) > 4096 {
			continue // every prefix of a 1 MiB record is slow and adds nothing
		}
		rec := mustAppend(t, m)
		for n := range len(rec) {
			if _, _, err := DecodeStored(rec[:n]); !errors.Is(err, ErrMalformed) {
				t.Fatalf("%s: DecodeStored of %d/%d bytes = %v, want ErrMalformed", name, n, len(rec), err)
			}
			if _, err := PeekStored(rec[:n]); !errors.Is(err, ErrMalformed) {
				t.Fatalf("%s: PeekStored of %d/%d bytes = %v, want ErrMalformed", name, n, len(rec), err)
			}
		}
	}
}

func TestDecodeStoredCorrupt(t *testing.T) {
	base := mustAppend(t, sampleMessage())
	h, err := PeekStored(base)
	if err != nil {
		t.Fatal(err)
	}
	bodyLenAt := len(base) - 2 - len(h.Properties) - 1 - len(h.Topic) - len(h.Body) - 4
	topicLenAt := bodyLenAt + 4 + len(h.Body)
	propsLenAt := topicLenAt + 1 + len(h.Topic)

	tests := []struct {
		name    string
		corrupt func(b []byte) []byte
	}{
		{"bad magic", func(b []byte) []byte { be.PutUint32(b[offMagic:], MagicV2); return b }},
		{"blank magic", func(b []byte) []byte { be.PutUint32(b[offMagic:], MagicBlank); return b }},
		{"total size too small", func(b []byte) []byte { be.PutUint32(b, MinStoredSize-1); return b }},
		{"negative total size", func(b []byte) []byte { be.PutUint32(b, 0xFFFFFFF0); return b }},
		{"total size one short", func(b []byte) []byte { be.PutUint32(b, uint32(len(b)-1)); return b }},
		{"total size one long", func(b []byte) []byte {
			be.PutUint32(b, uint32(len(b)+1))
			return append(b, 0)
		}},
		{"negative body length", func(b []byte) []byte { be.PutUint32(b[bodyLenAt:], 0xFFFFFFFF); return b }},
		{"huge body length", func(b []byte) []byte { be.PutUint32(b[bodyLenAt:], 0x7FFFFFFF); return b }},
		{"body length one long", func(b []byte) []byte { be.PutUint32(b[bodyLenAt:], uint32(len(h.Body)+1)); return b }},
		{"topic length long", func(b []byte) []byte { b[topicLenAt] = 0xFF; return b }},
		{"negative properties length", func(b []byte) []byte { be.PutUint16(b[propsLenAt:], 0x8000); return b }},
		{"properties length short", func(b []byte) []byte { be.PutUint16(b[propsLenAt:], uint16(len(h.Properties)-1)); return b }},
		{"born port out of range", func(b []byte) []byte { be.PutUint32(b[offBornHost+4:], 70000); return b }},
		{"store port negative", func(b []byte) []byte { be.PutUint32(b[offBornHost+8+8+4:], 0x80000000); return b }},
		{"ipv6 flag without room", func(b []byte) []byte {
			be.PutUint32(b[offSysFlag:], uint32(SysFlagBornHostV6|SysFlagStoreHostV6))
			be.PutUint32(b, MinStoredSize)
			return b[:MinStoredSize]
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.corrupt(bytes.Clone(base))
			if _, _, err := DecodeStored(b); !errors.Is(err, ErrMalformed) {
				t.Errorf("DecodeStored = %v, want ErrMalformed", err)
			}
		})
	}
}

func TestDecodeStoredSequence(t *testing.T) {
	var buf []byte
	var want []*Message
	for _, m := range storedMessages() {
		var err error
		if buf, err = AppendStored(buf, m); err != nil {
			t.Fatal(err)
		}
		want = append(want, m)
	}
	for i, w := range want {
		got, n, err := DecodeStored(buf)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if got.Topic != w.Topic || !bytes.Equal(got.Body, w.Body) {
			t.Errorf("record %d: topic %q, want %q", i, got.Topic, w.Topic)
		}
		buf = buf[n:]
	}
	if len(buf) != 0 {
		t.Errorf("%d bytes left", len(buf))
	}
}

func TestPatchStoredAndSetQueue(t *testing.T) {
	for _, name := range []string{"ipv4", "ipv6", "ipv6 born ipv4 store", "ipv4 born ipv6 store"} {
		t.Run(name, func(t *testing.T) {
			m := storedMessages()[name]
			rec := mustAppend(t, m)
			PatchStored(rec, 77, 1<<40, 1_800_000_000_000)
			h, err := PeekStored(rec)
			if err != nil {
				t.Fatal(err)
			}
			if h.QueueOffset != 77 || h.CommitLogOffset != 1<<40 || h.StoreTimestamp != 1_800_000_000_000 {
				t.Errorf("after PatchStored: queue offset %d, commit-log offset %d, store timestamp %d",
					h.QueueOffset, h.CommitLogOffset, h.StoreTimestamp)
			}
			if h.BornTimestamp != m.BornTimestamp || h.StoreHost != normHost(m.StoreHost) || h.QueueID != m.QueueID {
				t.Error("PatchStored changed other fields")
			}

			SetQueue(rec, 9, 5)
			got, _, err := DecodeStored(rec)
			if err != nil {
				t.Fatal(err)
			}
			if got.QueueID != 9 || got.QueueOffset != 5 || got.CommitLogOffset != 1<<40 || got.StoreTimestamp != 1_800_000_000_000 {
				t.Errorf("after SetQueue: %+v", got)
			}
			if got.Topic != m.Topic || !maps.Equal(got.Properties, m.Properties) || !bytes.Equal(got.Body, m.Body) {
				t.Error("SetQueue changed the payload")
			}

			// The patched record equals a fresh encoding with those values.
			m2 := *m
			m2.QueueID, m2.QueueOffset, m2.CommitLogOffset, m2.StoreTimestamp = 9, 5, 1<<40, 1_800_000_000_000
			if d := diffRecords(rec, mustAppend(t, &m2)); d != "" {
				t.Errorf("patched record differs from a fresh encoding: %s", d)
			}
		})
	}
}

func TestPatchStoredShortPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("PatchStored on a short buffer did not panic")
		}
	}()
	PatchStored(make([]byte, 40), 1, 2, 3)
}

func TestStoredAllocs(t *testing.T) {
	m := sampleMessage()
	m.Body = bytes.Repeat([]byte("x"), 1024)
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(1000, func() {
		var err error
		if buf, err = AppendStored(buf[:0], m); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("AppendStored: %v allocs, want 0", n)
	}
	rec := bytes.Clone(buf)
	if n := testing.AllocsPerRun(1000, func() {
		h, err := PeekStored(rec)
		if err != nil || h.TagHash() == 0 {
			t.Fatal("PeekStored failed")
		}
	}); n != 0 {
		t.Errorf("PeekStored + TagHash: %v allocs, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() { PatchStored(rec, 1, 2, 3); SetQueue(rec, 4, 5) }); n != 0 {
		t.Errorf("PatchStored + SetQueue: %v allocs, want 0", n)
	}
}

func FuzzDecodeStored(f *testing.F) {
	for _, m := range storedMessages() {
		if len(m.Body) < 4096 {
			f.Add(mustAppend(f, m))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, perr := PeekStored(b)
		m, n, err := DecodeStored(b)
		if (perr == nil) != (err == nil) {
			t.Fatalf("PeekStored error %v, DecodeStored error %v", perr, err)
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if n != int(h.TotalSize) || n > len(b) || n < MinStoredSize {
			t.Fatalf("consumed %d of %d bytes, TotalSize %d", n, len(b), h.TotalSize)
		}

		// A decoded record re-encodes, and the re-encoding is stable:
		// it decodes to the same message and re-encodes to the same bytes.
		enc1, err := AppendStored(nil, m)
		if errors.Is(err, ErrPropertiesTooLarge) && PropertiesSize(m.Properties) == MaxPropertiesSize+1 {
			// A full properties string without its final separator
			// decodes, but gains the separator when re-encoded.
			return
		}
		if err != nil {
			t.Fatalf("re-encoding a decoded record: %v", err)
		}
		if len(enc1) > n+1 { // +1: a missing final property separator is added
			t.Fatalf("re-encoding grew the record from %d to %d bytes", n, len(enc1))
		}
		m2, n2, err := DecodeStored(enc1)
		if err != nil || n2 != len(enc1) {
			t.Fatalf("decoding the re-encoding: %d, %v", n2, err)
		}
		want := normalized(m, int32(len(enc1)), bodyCRC(m.Body))
		if d := diffMessages(m2, &want); d != "" {
			t.Fatalf("re-encoded record decodes differently: %s", d)
		}
		enc2, err := AppendStored(nil, m2)
		if err != nil {
			t.Fatalf("third encoding: %v", err)
		}
		if d := diffRecords(enc1, enc2); d != "" {
			t.Fatalf("encoding is not stable: %s", d)
		}
	})
}

func benchMessage() *Message {
	m := sampleMessage()
	m.Body = bytes.Repeat([]byte("x"), 1024)
	return m
}

func BenchmarkAppendStored(b *testing.B) {
	m := benchMessage()
	buf := make([]byte, 0, 4096)
	b.SetBytes(int64(StoredSize(m, PropertiesSize(m.Properties))))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendStored(buf[:0], m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPeekStored(b *testing.B) {
	rec := mustAppend(b, benchMessage())
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := PeekStored(rec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeStored(b *testing.B) {
	rec := mustAppend(b, benchMessage())
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := DecodeStored(rec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLookupProperty(b *testing.B) {
	rec := mustAppend(b, benchMessage())
	h, err := PeekStored(rec)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(h.Properties)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := LookupProperty(h.Properties, PropertyUniqKey); !ok {
			b.Fatal("not found")
		}
	}
}
