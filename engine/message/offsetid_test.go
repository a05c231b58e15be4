package message

import (
	"errors"
	"math"
	"net/netip"
	"strings"
	"testing"
)

func TestOffsetID(t *testing.T) {
	tests := []struct {
		host   string
		offset int64
		want   string
	}{
		{"192.168.0.10:10911", 0, "C0A8000A00002A9F0000000000000000"},
		{"10.0.0.1:8080", 0x1234567890, "0A00000100001F900000001234567890"},
		{"[::ffff:192.168.0.10]:10911", 0, "C0A8000A00002A9F0000000000000000"},
		{"127.0.0.1:65535", math.MaxInt64, "7F0000010000FFFF7FFFFFFFFFFFFFFF"},
		{"[2001:db8::1]:10911", 255, "20010DB800000000000000000000000100002A9F00000000000000FF"},
		{"[fe80::1%eth0]:1", 1, "FE80000000000000000000000000000100000001" + "0000000000000001"},
	}
	for _, tt := range tests {
		host := netip.MustParseAddrPort(tt.host)
		got := OffsetID(host, tt.offset)
		if got != tt.want {
			t.Errorf("OffsetID(%s, %d) = %s, want %s", tt.host, tt.offset, got, tt.want)
		}
		if got := string(AppendOffsetID([]byte("x"), host, tt.offset)); got != "x"+tt.want {
			t.Errorf("AppendOffsetID = %s", got)
		}
		for _, s := range []string{got, strings.ToLower(got)} {
			h, off, err := ParseOffsetID(s)
			if err != nil {
				t.Fatalf("ParseOffsetID(%s): %v", s, err)
			}
			wantHost := netip.AddrPortFrom(host.Addr().Unmap().WithZone(""), host.Port())
			if h != wantHost || off != tt.offset {
				t.Errorf("ParseOffsetID(%s) = %v, %d; want %v, %d", s, h, off, wantHost, tt.offset)
			}
		}
	}
}

func TestOffsetIDInvalidHost(t *testing.T) {
	if got, want := OffsetID(netip.AddrPort{}, 7), "00000000000000000000000000000007"; got != want {
		t.Errorf("OffsetID(zero host) = %s, want %s", got, want)
	}
	host, off, err := ParseOffsetID("00000000000000000000000000000007")
	if err != nil || host != netip.MustParseAddrPort("0.0.0.0:0") || off != 7 {
		t.Errorf("ParseOffsetID(zero host) = %v, %d, %v", host, off, err)
	}
}

func TestParseOffsetIDErrors(t *testing.T) {
	tests := []string{
		"",
		"C0A8000A00002A9F000000000000000",   // 31
		"C0A8000A00002A9F00000000000000000", // 33
		"C0A8000A00002A9F000000000000000G",
		"C0A8000A00002A9F00000000000000 0",
		"C0A8000AFFFFFFFF0000000000000000", // port -1
		"C0A8000A000100000000000000000000", // port 65536
		strings.Repeat("0", 40),
		"7F0000010001000000009a1af5500001" + "00", // 34-char gRPC-style id
	}
	for _, s := range tests {
		if _, _, err := ParseOffsetID(s); !errors.Is(err, ErrBadMessageID) {
			t.Errorf("ParseOffsetID(%q) = %v, want ErrBadMessageID", s, err)
		}
	}
}

func TestOffsetIDAllocs(t *testing.T) {
	host := netip.MustParseAddrPort("[2001:db8::1]:10911")
	var sink string
	if n := testing.AllocsPerRun(1000, func() { sink = OffsetID(host, 12345) }); n != 1 {
		t.Errorf("OffsetID: %v allocs, want 1", n)
	}
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(1000, func() { buf = AppendOffsetID(buf[:0], host, 12345) }); n != 0 {
		t.Errorf("AppendOffsetID: %v allocs, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() { _, _, _ = ParseOffsetID(sink) }); n != 0 {
		t.Errorf("ParseOffsetID: %v allocs, want 0", n)
	}
}

func BenchmarkOffsetID(b *testing.B) {
	host := netip.MustParseAddrPort("192.168.0.10:10911")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = OffsetID(host, int64(i))
	}
}
