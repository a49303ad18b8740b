package config

import (
	"fmt"
	"net/netip"
)

// ParseTrustedProxies reads HARNESS_TRUSTED_PROXIES: comma-separated CIDRs
// (10.0.0.0/24, fd00::/64) or single addresses (127.0.0.1, ::1), the
// peers whose X-Forwarded-For and X-Forwarded-Proto are believed. Empty:
// none, so the TCP peer is always the client.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range splitList(s, ",") {
		p, err := parseProxy(item)
		if err != nil {
			return nil, fmt.Errorf("HARNESS_TRUSTED_PROXIES: %q: want a CIDR (10.0.0.0/24) or an IP address (127.0.0.1)", item)
		}
		out = append(out, p)
	}
	return out, nil
}

// parseProxy reads one entry; an address is a prefix of its full length,
// and an IPv4-mapped IPv6 form is read as IPv4, as peers are compared.
func parseProxy(s string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		if a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("zone in %q", s)
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if p.Addr().Is4In6() {
		bits := p.Bits() - 96
		if bits < 0 {
			return netip.Prefix{}, fmt.Errorf("%q: a mapped prefix shorter than /96", s)
		}
		p = netip.PrefixFrom(p.Addr().Unmap(), bits)
	}
	return p.Masked(), nil
}
