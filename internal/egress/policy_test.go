package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
)

func TestPublicAddresses(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"93.184.215.14": true, "2606:4700::6810:84e5": true, "8.8.8.8": true,
		"127.0.0.1": false, "10.0.0.1": false, "172.16.5.4": false, "192.168.1.1": false, "169.254.169.254": false,
		"100.64.0.1": false, "0.0.0.0": false, "255.255.255.255": false, "224.0.0.1": false,
		"::1": false, "::": false, "fe80::1": false, "fd00::1": false, "::ffff:127.0.0.1": false, "::ffff:8.8.8.8": true,
		"64:ff9b::7f00:1": false, "2002:7f00:1::": false,
	} {
		if got := Classify(netip.MustParseAddr(addr)); (got == "") != want {
			t.Errorf("Classify(%s) = %q, want public %v", addr, got, want)
		}
	}
}

func TestParseHost(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Docs.Example.com": "docs.example.com", "https://docs.example.com/": "docs.example.com", "docs.example.com:8443": "docs.example.com:8443",
		"*.corp.example": "*.corp.example", "127.0.0.1:8080": "127.0.0.1:8080", "10.0.0.7": "10.0.0.7",
		"[::1]:9000": "[::1]:9000", "[fd00::1]": "[fd00::1]",
		"": "", "exa mple.com": "", "a/b": "", "host:0": "", "host:99999": "", "-bad.com": "", "user@host": "",
	} {
		got, err := ParseHost(in)
		if (err != nil) != (want == "") || got != want {
			t.Errorf("ParseHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	r, _ := parseHostRule("*.corp.example")
	if !r.matches("wiki.corp.example", 443) || r.matches("corp.example", 443) || r.matches("evilcorp.example", 80) {
		t.Error("subdomain rule")
	}
	r, _ = parseHostRule("[::1]:9000")
	if !r.matches("::1", 9000) || r.matches("::1", 9001) {
		t.Error("IPv6 rule")
	}
}

// fixedResolver answers from a table.
type fixedResolver map[string][]netip.Addr

func (f fixedResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if ips, ok := f[host]; ok {
		return ips, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// The dialer's Control hook, the last check before connect, applies the
// same rules to the socket's address.
func TestWebFetchControlHook(t *testing.T) {
	t.Parallel()
	g := NewGuard(nil, func(ap netip.AddrPort) bool { return ap.Port() == 8080 }, nil, 0)
	tests := []struct {
		addr   string
		listed bool
		ok     bool
	}{
		{"93.184.215.14:443", false, true},
		{"127.0.0.1:80", false, false},
		{"127.0.0.1:80", true, true},
		{"[::ffff:10.0.0.1]:80", false, false},
		{"127.0.0.1:8080", true, false}, // reserved
		{"0.0.0.0:80", true, false},
		{"not-an-address", true, false},
	}
	for _, tt := range tests {
		err := g.control("h", tt.listed)("tcp", tt.addr, nil)
		var rf *Refusal
		if (err == nil) != tt.ok || (err != nil && !errors.As(err, &rf)) {
			t.Errorf("control(%v)(%s) = %v", tt.listed, tt.addr, err)
		}
	}
}

// Each refused range is named, so events and metrics can say why.
func TestClassify(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]Reason{
		"127.0.0.1": ReasonLoopback, "::1": ReasonLoopback, "::ffff:127.0.0.1": ReasonLoopback,
		"10.1.2.3": ReasonPrivate, "192.168.0.1": ReasonPrivate, "fd12::1": ReasonPrivate,
		"169.254.169.254": ReasonMetadata, "169.254.1.1": ReasonLinkLocal, "fe80::1": ReasonLinkLocal,
		"100.64.0.1": ReasonCGNAT, "224.0.0.1": ReasonMulticast, "0.0.0.0": ReasonUnspecified, "::": ReasonUnspecified,
		"192.0.2.1": ReasonReserved, "64:ff9b::7f00:1": ReasonReserved, "8.8.8.8": "",
	} {
		if got := Classify(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Classify(%s) = %q, want %q", addr, got, want)
		}
	}
}
