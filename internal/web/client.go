package web

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/labstack/echo/v4"
)

// client is who sent a request, as far as the server can tell: the
// address every per-address rule counts (login limits, the login
// session's IP, the request log) and whether the browser's connection
// is HTTPS (the Secure cookie flag, the WebSocket Origin's scheme, share
// link URLs).
type client struct {
	Addr  string
	HTTPS bool
}

type clientKey struct{}

// proxies are the peers whose X-Forwarded-For and X-Forwarded-Proto are
// believed (HARNESS_TRUSTED_PROXIES). Nobody else's are: a tool with the
// network on reaches the server from loopback and may send any header.
type proxies []netip.Prefix

// trusts reports whether a is one of the proxies.
func (p proxies) trusts(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	for _, pre := range p {
		if pre.Contains(a) {
			return true
		}
	}
	return false
}

// clientOf decides who sent r. The TCP peer is the client unless it is a
// trusted proxy; then X-Forwarded-For is read from the right (each proxy
// appends the address it was reached from), skipping trusted proxies, and
// the first untrusted address is the client: entries left of it are
// whatever that client chose to send. A malformed entry ends the walk at
// the last address known good, so a bad header never names a client. Only
// a trusted peer's X-Forwarded-Proto counts.
func (p proxies) clientOf(r *http.Request) client {
	peer, ok := peerAddr(r)
	if !ok {
		return client{Addr: r.RemoteAddr, HTTPS: r.TLS != nil}
	}
	if !p.trusts(peer) {
		return client{Addr: peer.String(), HTTPS: r.TLS != nil}
	}
	addr := peer
	for _, e := range forwardedFor(r) {
		a, ok := parseForwarded(e)
		if !ok {
			break
		}
		addr = a
		if !p.trusts(a) {
			break
		}
	}
	return client{Addr: addr.String(), HTTPS: r.TLS != nil || forwardedHTTPS(r)}
}

// forwardedFor is the X-Forwarded-For entries of every header line, last
// first.
func forwardedFor(r *http.Request) []string {
	var out []string
	lines := r.Header.Values("X-Forwarded-For")
	for i := len(lines) - 1; i >= 0; i-- {
		parts := strings.Split(lines[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			out = append(out, strings.TrimSpace(parts[j]))
		}
	}
	return out
}

// parseForwarded reads one X-Forwarded-For entry: an address, or an
// address with a port as some proxies write it.
func parseForwarded(e string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(e); err == nil && a.Zone() == "" {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(e); err == nil && ap.Addr().Zone() == "" {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// forwardedHTTPS reads X-Forwarded-Proto; with several values (proxies
// that append) the first is the scheme the browser used.
func forwardedHTTPS(r *http.Request) bool {
	first, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(first), "https")
}

// peerAddr is the TCP peer's address.
func peerAddr(r *http.Request) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	return a.Unmap(), err == nil
}

// resolveClient decides who the client is once, before anything else
// runs, for every handler and middleware to read (ClientAddr, isHTTPS).
func (s *Server) resolveClient(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		c.SetRequest(r.WithContext(context.WithValue(r.Context(), clientKey{}, s.proxies.clientOf(r))))
		return next(c)
	}
}

// clientFrom is the client resolveClient found; a request that did not
// pass it (a test calling a check directly) trusts no proxy.
func clientFrom(r *http.Request) client {
	if cl, ok := r.Context().Value(clientKey{}).(client); ok {
		return cl
	}
	return proxies(nil).clientOf(r)
}

// ClientAddr is the client's IP for rate limiting, login sessions and
// logs (clientOf decides it).
func ClientAddr(r *http.Request) string { return clientFrom(r).Addr }

// isHTTPS: TLS here, or a trusted TLS reverse proxy in front that says so.
func isHTTPS(r *http.Request) bool { return clientFrom(r).HTTPS }
