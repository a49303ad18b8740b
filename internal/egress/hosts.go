package egress

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// hostRule is one allow-list entry: a host name (or "*.domain" for its
// subdomains) or an IP address, with an optional port (0: any).
type hostRule struct {
	host string
	ip   netip.Addr
	port uint16
	sub  bool // "*.example.com": example.com's subdomains
}

// ParseHost reads one allow-list entry: "host", "host:port",
// "*.domain", an IPv4 address or a bracketed IPv6 one, each with an
// optional port; a leading "http://" or "https://" and a trailing "/" are
// ignored. It returns the entry normalised.
func ParseHost(s string) (string, error) {
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
