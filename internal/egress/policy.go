// Package egress is the one network policy of Harness: what web_fetch (in
// the server process) and a network-on sandbox (through the proxy the
// server runs for it) may connect to. Public addresses are allowed;
// loopback, private, link-local, CGNAT, metadata and the other non-public
// ranges only for hosts on the admin's allow-list (HARNESS_FETCH_HOSTS and
// Settings); this server's own listeners and database never.
//
// Every address a host name resolves to is checked, the connection goes to
// that checked address (never a second lookup, so a DNS answer that
// changes between check and use cannot redirect it), and the dialer's
// Control hook checks the socket's address again just before connect.
package egress

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

// Resolver looks host names up (net.DefaultResolver in the server; tests
// give a fixed table to show the check runs after resolution).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Reason is why a connection was refused; events and metric labels name it.
type Reason string

const (
	ReasonLoopback    Reason = "loopback"
	ReasonPrivate     Reason = "private"
	ReasonLinkLocal   Reason = "link-local"
	ReasonCGNAT       Reason = "cgnat"
	ReasonMetadata    Reason = "metadata"
	ReasonMulticast   Reason = "multicast"
	ReasonReserved    Reason = "reserved"    // documentation, benchmark, transition prefixes, ...
	ReasonUnspecified Reason = "unspecified" // 0.0.0.0, ::, or not an address
	ReasonServer      Reason = "server"      // this server's own listener or database
	ReasonNoAddress   Reason = "no-address"  // the name resolved to nothing
)

// Refusal is a connection the policy refused.
type Refusal struct {
	Host   string         `json:"host"`             // as asked (a name or an address)
	Port   uint16         `json:"port"`             // as asked
	Addr   netip.AddrPort `json:"address,omitzero"` // the address refused, when resolved
	Reason Reason         `json:"reason"`
}

func (r *Refusal) Error() string {
	target := net.JoinHostPort(r.Host, strconv.Itoa(int(r.Port)))
	why := ""
	switch r.Reason {
	case ReasonServer:
		why = fmt.Sprintf("%s belongs to this server (its own listener or database), which is never reached", r.Addr)
	case ReasonUnspecified:
		why = fmt.Sprintf("%s is not an address to connect to", r.Addr)
	case ReasonNoAddress:
		why = "the name has no address"
	default:
		why = fmt.Sprintf("%s is a %s address, and the host is not on the admin's allow-list (HARNESS_FETCH_HOSTS)", r.Addr.Addr(), r.Reason)
	}
	return fmt.Sprintf("refused to connect to %s: %s", target, why)
}

// Short is the one-line form events and logs show: "127.0.0.1:5432 (loopback)".
func (r *Refusal) Short() string {
	target := net.JoinHostPort(r.Host, strconv.Itoa(int(r.Port)))
	if r.Addr.IsValid() && r.Addr.Addr().String() != r.Host {
		target += " at " + r.Addr.String()
	}
	return target + " (" + string(r.Reason) + ")"
}

// ranges classify the addresses that are not the public internet: the
// first match names the reason. IPv6 prefixes that embed an IPv4 address
// (NAT64, 6to4, Teredo) are refused as reserved, since they could smuggle a
// private one.
var ranges = func() []struct {
	p netip.Prefix
	r Reason
} {
	var out []struct {
		p netip.Prefix
		r Reason
	}
	add := func(r Reason, prefixes ...string) {
		for _, s := range prefixes {
			out = append(out, struct {
				p netip.Prefix
				r Reason
			}{netip.MustParsePrefix(s), r})
		}
	}
	add(ReasonUnspecified, "0.0.0.0/8", "::/128")
	add(ReasonLoopback, "127.0.0.0/8", "::1/128")
	add(ReasonMetadata, "169.254.169.254/32", "fd00:ec2::254/128")
	add(ReasonLinkLocal, "169.254.0.0/16", "fe80::/10")
	add(ReasonCGNAT, "100.64.0.0/10")
	add(ReasonPrivate, "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7", "fec0::/10")
	add(ReasonMulticast, "224.0.0.0/4", "ff00::/8")
	add(ReasonReserved, "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "198.18.0.0/15", "198.51.100.0/24",
		"203.0.113.0/24", "240.0.0.0/4", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64",
		"2001::/23", "2001:db8::/32", "2002::/16")
	return out
}()

// Classify says why ip is not a public internet address ("" when it is).
func Classify(ip netip.Addr) Reason {
	ip = ip.Unmap()
	if !ip.IsValid() {
		return ReasonUnspecified
	}
	for _, r := range ranges {
		if r.p.Contains(ip) {
			return r.r
		}
	}
	return ""
}

// Guard dials under the policy. Build one per use (a fetch, a proxied
// connection), so it sees the allow-list as it is now.
type Guard struct {
	allow    []hostRule
	reserved func(netip.AddrPort) bool
	resolver Resolver
	timeout  time.Duration // per connection attempt
}

// NewGuard builds a guard: allow is the admin's allow-list (ParseHost's
// forms; bad entries are skipped, the configuration checked them), reserved
// reports this server's own addresses (nil: none), resolver looks names up
// (nil: net.DefaultResolver), timeout bounds each connection attempt.
func NewGuard(allow []string, reserved func(netip.AddrPort) bool, resolver Resolver, timeout time.Duration) *Guard {
	g := &Guard{reserved: reserved, resolver: resolver, timeout: timeout}
	if g.resolver == nil {
		g.resolver = net.DefaultResolver
	}
	for _, e := range allow {
		if r, err := parseHostRule(e); err == nil {
			g.allow = append(g.allow, r)
		}
	}
	return g
}

// allowListed reports whether the admin allowed host:port at any address.
func (g *Guard) allowListed(host string, port uint16) bool {
	for _, r := range g.allow {
		if r.matches(host, port) {
			return true
		}
	}
	return false
}

// check says why ap may not be reached ("" when it may).
func (g *Guard) check(ap netip.AddrPort, listed bool) Reason {
	ip := ap.Addr().Unmap()
	ap = netip.AddrPortFrom(ip, ap.Port())
	r := Classify(ip)
	switch {
	case r == ReasonUnspecified:
		return r
	case g.reserved != nil && g.reserved(ap):
		return ReasonServer
	case listed:
		return ""
	}
	return r
}

// Dial connects to addr ("host:port", as a transport asks) through the
// guard: the host is resolved here, every address is checked, and only a
// checked address is dialled. A refusal is a *Refusal.
func (g *Guard) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
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
	var first *Refusal
	var errs []error
	for _, ip := range ips {
		ap := netip.AddrPortFrom(ip.Unmap(), port)
		if reason := g.check(ap, listed); reason != "" {
			if first == nil {
				first = &Refusal{Host: host, Port: port, Addr: ap, Reason: reason}
			}
			continue
		}
		d := net.Dialer{Timeout: g.timeout, Control: g.control(host, listed)}
		c, err := d.DialContext(ctx, network, ap.String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	switch {
	case len(errs) > 0:
		return nil, errors.Join(errs...)
	case first != nil:
		return nil, first
	}
	return nil, &Refusal{Host: host, Port: port, Reason: ReasonNoAddress}
}

// control re-checks the address the socket is about to connect to.
func (g *Guard) control(host string, listed bool) func(network, address string, _ syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &Refusal{Host: host, Reason: ReasonUnspecified}
		}
		if reason := g.check(ap, listed); reason != "" {
			return &Refusal{Host: host, Port: ap.Port(), Addr: ap, Reason: reason}
		}
		return nil
	}
}
