package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"harness/internal/service"
)

// CheckOrigin decides whether a WebSocket upgrade may proceed:
//
//   - no Origin header: only for bearer-token clients (scripts); browsers
//     always send Origin on a WebSocket handshake. The actor middleware has
//     already refused an invalid token.
//   - Origin "null" or unparsable: refused.
//   - otherwise the Origin's host[:port] must equal the request's Host
//     (default ports :80/:443 ignored, case-insensitive), or the Origin must
//     be one of trusted (scheme://host[:port]).
//
// X-Forwarded-Host is not honoured: a TLS reverse proxy must pass the Host
// header through, or its public origin must be listed in trusted.
func CheckOrigin(r *http.Request, trusted []string) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		_, ok := bearerToken(r)
		return ok
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	if stripDefaultPort(u.Host) == stripDefaultPort(r.Host) {
		return true
	}
	norm := u.Scheme + "://" + stripDefaultPort(u.Host)
	for _, t := range trusted {
		tu, err := url.Parse(strings.TrimRight(t, "/"))
		if err == nil && tu.Scheme+"://"+stripDefaultPort(tu.Host) == norm {
			return true
		}
	}
	return false
}

func stripDefaultPort(host string) string {
	host = strings.ToLower(host)
	for _, p := range []string{":80", ":443"} {
		if h, ok := strings.CutSuffix(host, p); ok {
			return h
		}
	}
	return host
}

// RequireSameOrigin refuses, with 403, requests that fail CheckOrigin
// against the server's trusted origins. Put it on the WebSocket route.
func (s *Server) RequireSameOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !CheckOrigin(c.Request(), s.trusted) {
			return service.NewError(service.CodeForbidden, "cross-origin request refused")
		}
		return next(c)
	}
}
