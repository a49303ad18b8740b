package web

import (
	"crypto/tls"
	"net/http"
	"net/netip"
	"testing"
)

func prefixes(t *testing.T, ss ...string) proxies {
	t.Helper()
	var out proxies
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

// TestClientOf: forwarding headers count only from a trusted peer, and
// then only up to the first untrusted hop from the right.
func TestClientOf(t *testing.T) {
	t.Parallel()
	loopback := prefixes(t, "127.0.0.0/8", "::1/128")
	chain := prefixes(t, "127.0.0.1/32", "10.0.0.0/24")
	tests := []struct {
		name    string
		trusted proxies
		remote  string
		xff     []string
		proto   string
		tls     bool
		want    string
		https   bool
	}{
		{name: "direct peer", remote: "192.0.2.7:5555", want: "192.0.2.7"},
		{name: "untrusted remote peer cannot spoof", trusted: loopback, remote: "192.0.2.7:5555", xff: []string{"198.51.100.1"}, want: "192.0.2.7"},
		{name: "no proxies: a loopback peer is the client", remote: "127.0.0.1:5555", xff: []string{"198.51.100.1"}, want: "127.0.0.1"},
		{name: "no proxies: IPv6 loopback too", remote: "[::1]:5555", xff: []string{"198.51.100.1"}, want: "::1"},
		{name: "no proxies: X-Forwarded-Proto ignored", remote: "127.0.0.1:5555", proto: "https", want: "127.0.0.1"},
		{name: "trusted proxy", trusted: loopback, remote: "127.0.0.1:5555", xff: []string{"198.51.100.1"}, want: "198.51.100.1"},
		{name: "trusted proxy's scheme", trusted: loopback, remote: "127.0.0.1:5555", xff: []string{"198.51.100.1"}, proto: "HTTPS", want: "198.51.100.1", https: true},
		{name: "appending proxies: the first is the browser's", trusted: loopback, remote: "127.0.0.1:5555", proto: "https, http", want: "127.0.0.1", https: true},
		{name: "trusted proxy says http", trusted: loopback, remote: "127.0.0.1:5555", proto: "http", want: "127.0.0.1"},
		{name: "direct TLS", remote: "192.0.2.7:5555", tls: true, proto: "http", want: "192.0.2.7", https: true},
		{name: "a client's own entries are left of the proxy's", trusted: loopback, remote: "127.0.0.1:5555", xff: []string{"10.9.9.9, 198.51.100.2"}, want: "198.51.100.2"},
		{name: "the last header line is the nearest", trusted: loopback, remote: "[::1]:5555", xff: []string{"10.9.9.9", "198.51.100.3"}, want: "198.51.100.3"},
		{name: "a chain of trusted proxies is skipped", trusted: chain, remote: "127.0.0.1:5555", xff: []string{"6.6.6.6, 203.0.113.4, 10.0.0.8"}, want: "203.0.113.4"},
		{name: "an untrusted hop in the chain ends it", trusted: chain, remote: "127.0.0.1:5555", xff: []string{"203.0.113.4, 10.0.1.8, 10.0.0.8"}, want: "10.0.1.8"},
		{name: "all trusted: the leftmost", trusted: chain, remote: "127.0.0.1:5555", xff: []string{"10.0.0.9, 10.0.0.8"}, want: "10.0.0.9"},
		{name: "peer trusted as an IPv4-mapped address", trusted: chain, remote: "[::ffff:10.0.0.3]:5555", xff: []string{"203.0.113.5"}, want: "203.0.113.5"},
		{name: "entry with a port", trusted: loopback, remote: "127.0.0.1:5555", xff: []string{"203.0.113.6:4711"}, want: "203.0.113.6"},
		{name: "IPv6 entry", trusted: loopback, remote: "127.0.0.1:5555", xff: []string{"2001:db8::1"}, want: "2001:db8::1"},
		{name: "malformed: the peer", trusted: loopback, remote: "127.0.0.1:5555", xff: []string{"not-an-ip"}, want: "127.0.0.1"},
		{name: "malformed: the last good trusted hop", trusted: chain, remote: "127.0.0.1:5555", xff: []string{"203.0.113.7, junk, 10.0.0.8"}, want: "10.0.0.8"},
		{name: "empty entry is malformed", trusted: loopback, remote: "127.0.0.1:5555", xff: []string{"203.0.113.7,"}, want: "127.0.0.1"},
		{name: "zoned entry is malformed", trusted: loopback, remote: "127.0.0.1:5555", xff: []string{"fe80::1%eth0"}, want: "127.0.0.1"},
		{name: "trusted, no header", trusted: loopback, remote: "127.0.0.1:5555", want: "127.0.0.1"},
		{name: "no port", remote: "192.0.2.9", want: "192.0.2.9"},
		{name: "unparsable peer kept as is", trusted: loopback, remote: "pipe", xff: []string{"203.0.113.8"}, want: "pipe"},
	}
	for _, tt := range tests {
		r, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
		r.RemoteAddr = tt.remote
		for _, v := range tt.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if tt.proto != "" {
			r.Header.Set("X-Forwarded-Proto", tt.proto)
		}
		if tt.tls {
			r.TLS = &tls.ConnectionState{}
		}
		if got := tt.trusted.clientOf(r); got != (client{Addr: tt.want, HTTPS: tt.https}) {
			t.Errorf("%s: %+v, want %s https=%v", tt.name, got, tt.want, tt.https)
		}
	}
}
