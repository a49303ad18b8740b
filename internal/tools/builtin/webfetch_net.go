package builtin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// web_fetch runs in the server process, outside the sandbox, so it polices
// its own connections: every address a host name resolves to is checked,
// the connection goes to that checked address (never a second lookup, so a
// DNS answer that changes between check and use cannot redirect it), and
// the dialer's Control hook checks the socket's address again just before
// connect. Redirects dial through the same guard, hop by hop.

// Resolver looks host names up (net.DefaultResolver in the server; tests
// give a fixed table to show the check runs after resolution).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// nonPublic are the IPv4 and IPv6 ranges that are not the public internet:
// loopback, private, shared (CGNAT), link-local, documentation, benchmark,
// multicast, reserved, and the IPv6 transition prefixes that embed an IPv4
// address (NAT64, 6to4, Teredo), which could smuggle a private one.
var nonPublic = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16",
		"198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64",
		"2001::/23", "2001:db8::/32", "2002::/16", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// Public reports whether ip is a public internet address.
func Public(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// hostRule is one allow-list entry: a host name (or "*.domain" for its
// subdomains) or an IP address, with an optional port (0: any).
type hostRule struct {
	host string
	ip   netip.Addr
	port uint16
	sub  bool // "*.example.com": example.com's subdomains
}

// ParseFetchHost reads one allow-list entry: "host", "host:port",
// "*.domain", an IPv4 address or a bracketed IPv6 one, each with an
// optional port; a leading "http://" or "https://" and a trailing "/" are
// ignored. It returns the entry normalised.
func ParseFetchHost(s string) (string, error) {
	r, err := parseHostRule(s)
	if err != nil {
		return "", err
	}
	return r.String(), nil
}

func parseHostRule(s string) (hostRule, error) {
	raw := s
	s = strings.ToLower(strings.TrimSpace(s))
	for _, p := range []string{"http://", "https://"} {
		s = strings.TrimPrefix(s, p)
	}
	s = strings.TrimSuffix(s, "/")
	bad := func() (hostRule, error) {
		return hostRule{}, fmt.Errorf("%q is not a host (write host, host:port, *.domain or an IP address)", raw)
	}
	if s == "" || strings.ContainsAny(s, "/?#@ \t") {
		return bad()
	}
	var r hostRule
	host := s
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return bad()
		}
		host, r.port = h, uint16(n)
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		r.ip = ip.Unmap()
		return r, nil
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		r.sub, host = true, rest
	}
	host = strings.TrimSuffix(host, ".")
	if !validHostName(host) {
		return bad()
	}
	r.host = host
	return r, nil
}

// validHostName accepts DNS names of letters, digits, '-' and '.'.
func validHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

func (r hostRule) String() string {
	h := r.host
	switch {
	case r.ip.IsValid() && r.ip.Is6():
		h = "[" + r.ip.String() + "]"
	case r.ip.IsValid():
		h = r.ip.String()
	case r.sub:
		h = "*." + h
	}
	if r.port != 0 {
		if r.ip.IsValid() && r.ip.Is6() {
			return h + ":" + strconv.Itoa(int(r.port))
		}
		return net.JoinHostPort(h, strconv.Itoa(int(r.port)))
	}
	return h
}

// matches reports whether the rule covers host (lower case, as in the URL)
// at port.
func (r hostRule) matches(host string, port uint16) bool {
	if r.port != 0 && r.port != port {
		return false
	}
	if r.ip.IsValid() {
		ip, err := netip.ParseAddr(host)
		return err == nil && ip.Unmap() == r.ip
	}
	host = strings.TrimSuffix(host, ".")
	if r.sub {
		return strings.HasSuffix(host, "."+r.host)
	}
	return host == r.host
}

// refusal is a connection the guard refused; web_fetch reports it as
// FETCH_REFUSED.
type refusal struct{ msg string }

func (e *refusal) Error() string { return e.msg }

// fetchGuard dials for one web_fetch call.
type fetchGuard struct {
	rules    []hostRule
	reserved func(netip.AddrPort) bool
	resolver Resolver
	timeout  time.Duration // per connection attempt
}

// allowListed reports whether the admin allowed host:port at any address.
func (g *fetchGuard) allowListed(host string, port uint16) bool {
	for _, r := range g.rules {
		if r.matches(host, port) {
			return true
		}
	}
	return false
}

// check says why ap may not be reached ("" when it may).
func (g *fetchGuard) check(ap netip.AddrPort, allowListed bool) string {
	ip := ap.Addr().Unmap()
	ap = netip.AddrPortFrom(ip, ap.Port())
	switch {
	case !ip.IsValid() || ip.IsUnspecified():
		return fmt.Sprintf("%s is not an address to fetch from", ap)
	case g.reserved != nil && g.reserved(ap):
		return fmt.Sprintf("%s belongs to this server (its own listener or database), which web_fetch never reaches", ap)
	case !allowListed && !Public(ip):
		return fmt.Sprintf("%s is a loopback, private or link-local address, and the host is not on the admin's web fetch allow-list", ip)
	}
	return ""
}

// dial connects to addr ("host:port", as the transport asks) through the
// guard: the host is resolved here, every address is checked, and only a
// checked address is dialled.
func (g *fetchGuard) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("port %q: %w", p, err)
	}
	port := uint16(n)
	host = strings.ToLower(host)
	listed := g.allowListed(host, port)
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else if ips, err = g.resolver.LookupNetIP(ctx, "ip", host); err != nil {
		return nil, fmt.Errorf("look up %s: %w", host, err)
	}
	var why []string
	var errs []error
	for _, ip := range ips {
		ap := netip.AddrPortFrom(ip.Unmap(), port)
		if reason := g.check(ap, listed); reason != "" {
			why = append(why, reason)
			continue
		}
		d := net.Dialer{Timeout: g.timeout, Control: g.control(listed)}
		c, err := d.DialContext(ctx, network, ap.String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(why) == 0 {
		return nil, fmt.Errorf("%s has no address", host)
	}
	return nil, &refusal{msg: fmt.Sprintf("refused to connect to %s: %s", host, why[0])}
}

// control re-checks the address the socket is about to connect to.
func (g *fetchGuard) control(listed bool) func(network, address string, _ syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &refusal{msg: fmt.Sprintf("refused to connect to %q: not an address", address)}
		}
		if reason := g.check(ap, listed); reason != "" {
			return &refusal{msg: "refused to connect: " + reason}
		}
		return nil
	}
}
