package console

import (
	"net"
	"testing"
)

func TestIsLocal(t *testing.T) {
	var local string
	if ifs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range ifs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				local = n.IP.String()
				break
			}
		}
	}
	tests := []struct {
		addr, bound string
		want        bool
	}{
		{"127.0.0.1:10911", "127.0.0.1:10911", true},
		{"127.0.0.1:10911", "[::]:10911", true},
		{"127.0.0.1:10911", ":10911", true},
		{"127.0.0.1:10912", ":10911", false},
		{"192.0.2.1:10911", ":10911", false}, // TEST-NET-1: not this host
		{"192.0.2.1:10911", "127.0.0.1:10911", false},
		{"127.0.0.1:10911", "", false},
		{"", ":10911", false},
		{"not an address", ":10911", false},
	}
	if local != "" {
		tests = append(tests, struct {
			addr, bound string
			want        bool
		}{net.JoinHostPort(local, "10911"), "0.0.0.0:10911", true})
	}
	for _, tc := range tests {
		if got := isLocal(tc.addr, tc.bound); got != tc.want {
			t.Errorf("isLocal(%q, %q) = %v, want %v", tc.addr, tc.bound, got, tc.want)
		}
	}
}
