package broker

import (
	"fmt"
	"net"
	"net/netip"
)

// Advertise returns the address clients are told to dial: override when
// set (it must be an IPv4 ip:port, since clients parse routes for IPv4
// only), else the listener's address with its IP replaced as needed: a
// specific IPv4 address stays, the IPv6 loopback becomes 127.0.0.1, and
// any other (":10911", "0.0.0.0", "::", a specific IPv6 address) the
// host's first non-loopback IPv4 address (127.0.0.1 when it has none).
func Advertise(ln net.Addr, override string) (string, error) {
	if override != "" {
		ap, err := netip.ParseAddrPort(override)
		if err != nil || !ap.Addr().Unmap().Is4() || ap.Port() == 0 {
			return "", fmt.Errorf("broker: --%s-advertise-addr %q: want an IPv4 ip:port", Name, override)
		}
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).String(), nil
	}
	ap, err := netip.ParseAddrPort(ln.String())
	if err != nil {
		return "", fmt.Errorf("broker: listener address %s: %w", ln, err)
	}
	ip := ap.Addr().Unmap()
	switch {
	case ip.Is4() && !ip.IsUnspecified():
	case ip.IsLoopback():
		ip = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	default:
		ip = hostIPv4()
	}
	return netip.AddrPortFrom(ip, ap.Port()).String(), nil
}

// hostIPv4 returns the host's first non-loopback IPv4 address, or
// 127.0.0.1.
func hostIPv4() netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				ip = ip.Unmap()
				if ip.Is4() && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
					return ip
				}
			}
		}
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1})
}

// dialable turns a bound listener address into one a client of the same
// host can dial: an unspecified IP becomes 127.0.0.1.
func dialable(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
