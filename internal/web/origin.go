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
//   - otherwise the Origin must be the request's own origin: the same
//     scheme (https when the connection is TLS or a trusted proxy says so
//     with X-Forwarded-Proto, else http) and the same host[:port] as the Host
//     header (the scheme's default port ignored, case-insensitive); or one
//     of trusted (scheme://host[:port]).
//
// The scheme counts: a page of https://host is another origin than
// http://host, and may be another program. X-Forwarded-Host is not
// honoured: a TLS reverse proxy must pass the Host header through and set
// X-Forwarded-Proto (and be listed in HARNESS_TRUSTED_PROXIES), or its
// public origin must be listed in trusted.
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
	norm := originOf(u.Scheme, u.Host)
	scheme := "http"
	if isHTTPS(r) {
		scheme = "https"
	}
	if norm == originOf(scheme, r.Host) {
		return true
	}
	for _, t := range trusted {
		tu, err := url.Parse(strings.TrimRight(t, "/"))
		if err == nil && originOf(tu.Scheme, tu.Host) == norm {
			return true
		}
	}
	return false
}

// originOf is scheme://host[:port] lower-cased, without the scheme's
// default port.
func originOf(scheme, host string) string {
	scheme, host = strings.ToLower(scheme), strings.ToLower(host)
	def := ":80"
	if scheme == "https" {
		def = ":443"
	}
	return scheme + "://" + strings.TrimSuffix(host, def)
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
