package broker

import (
	"net"
	"net/netip"
	"testing"
)

func TestAdvertise(t *testing.T) {
	host := hostIPv4()
	tests := []struct {
		listen, override, want string
		err                    bool
	}{
		{"10.1.2.3:10911", "", "10.1.2.3:10911", false},
		{"127.0.0.1:10911", "", "127.0.0.1:10911", false},
		{"127.0.0.2:10911", "", "127.0.0.2:10911", false},
		{"[::1]:10911", "", "127.0.0.1:10911", false},
		{"0.0.0.0:10911", "", host.String() + ":10911", false},
		{"[::]:4000", "", host.String() + ":4000", false},
		{"[fe80::1]:4000", "", host.String() + ":4000", false},
		{"0.0.0.0:10911", "192.168.7.7:9999", "192.168.7.7:9999", false},
		{"0.0.0.0:10911", "[::ffff:192.168.7.7]:9999", "192.168.7.7:9999", false},
		{"0.0.0.0:10911", "broker.example:10911", "", true},
		{"0.0.0.0:10911", "[2001:db8::1]:10911", "", true},
		{"0.0.0.0:10911", "10.0.0.1:0", "", true},
	}
	for _, tt := range tests {
		addr := net.TCPAddrFromAddrPort(netip.MustParseAddrPort(tt.listen))
		got, err := Advertise(addr, tt.override)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("Advertise(%s, %q) = %q, %v; want %q (error %t)", tt.listen, tt.override, got, err, tt.want, tt.err)
		}
	}
	if !host.Is4() || host.IsLoopback() && host != netip.MustParseAddr("127.0.0.1") {
		t.Fatalf("host address %v", host)
	}
}

func TestDialable(t *testing.T) {
	for in, want := range map[string]string{
		"0.0.0.0:9876":   "127.0.0.1:9876",
		"[::]:9876":      "127.0.0.1:9876",
		"10.0.0.5:9876":  "10.0.0.5:9876",
		"127.0.0.1:9876": "127.0.0.1:9876",
	} {
		if got := dialable(net.TCPAddrFromAddrPort(netip.MustParseAddrPort(in))); got != want {
			t.Errorf("dialable(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestListFlag(t *testing.T) {
	var l []string
	v := listValue{&l}
	if err := v.Set("10.0.0.1:9876;10.0.0.2:9876, 10.0.0.3:9876"); err != nil || len(l) != 3 || v.String() != "10.0.0.1:9876,10.0.0.2:9876,10.0.0.3:9876" {
		t.Fatalf("list %v, %v", l, err)
	}
	if err := v.Set("nohost"); err == nil {
		t.Fatal("accepted an address without port")
	}
}
