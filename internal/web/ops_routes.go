package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"harness/internal/service"
)

// opsRoutes serves /metrics (the metrics token, a direct loopback client
// such as a local Prometheus, or an admin) and pprof (admins only).
func (s *Server) opsRoutes() {
	if s.metrics != nil {
		s.e.GET("/metrics", echo.WrapHandler(s.metrics), s.requireMetricsAccess)
	}
	g := s.e.Group("/debug/pprof", s.RequireAdmin)
	g.GET("/", echo.WrapHandler(http.HandlerFunc(pprof.Index)))
	g.GET("/cmdline", echo.WrapHandler(http.HandlerFunc(pprof.Cmdline)))
	g.GET("/profile", echo.WrapHandler(http.HandlerFunc(pprof.Profile)))
	g.GET("/symbol", echo.WrapHandler(http.HandlerFunc(pprof.Symbol)))
	g.GET("/trace", echo.WrapHandler(http.HandlerFunc(pprof.Trace)))
	g.GET("/:name", func(c echo.Context) error {
		pprof.Handler(c.Param("name")).ServeHTTP(c.Response(), c.Request())
		return nil
	})
}

// requireMetricsAccess lets through a request bearing the metrics token
// (HARNESS_METRICS_TOKEN; any other bearer: 401) and a direct loopback
// client; anyone else must be an admin. A request that came through a
// proxy (forwarding headers) is not local even when the proxy is, nor is
// one whose Host is not a loopback name: a web page whose DNS name was
// rebound to 127.0.0.1 reaches the port from this machine's browser, but
// with its own name as Host. An anonymous client that is not a browser (a
// remote scraper) gets 401, not the login page.
func (s *Server) requireMetricsAccess(next echo.HandlerFunc) echo.HandlerFunc {
	admin := s.RequireAdmin(next)
	return func(c echo.Context) error {
		r := c.Request()
		if tok, ok := bearerToken(r); ok {
			if !s.metricsTokenIs(tok) {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
				return service.NewError(service.CodeUnauthorized, "metrics token is not valid")
			}
			return next(c)
		}
		if directLoopback(r) {
			return next(c)
		}
		if ActorFrom(c) == nil && !strings.Contains(r.Header.Get("Accept"), "text/html") {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			return service.NewError(service.CodeUnauthorized, "authentication required")
		}
		return admin(c)
	}
}

// metricsTokenIs compares tok with the metrics token in constant time
// (their hashes: the time depends on neither length); false when no token
// is configured.
func (s *Server) metricsTokenIs(tok string) bool {
	if s.metricsToken == nil {
		return false
	}
	sum := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(sum[:], s.metricsToken) == 1
}

// directLoopback: the TCP peer is loopback and sent no forwarding header.
// Forwarding headers, from a trusted proxy or not, only ever take
// locality away, so a loopback proxy left out of HARNESS_TRUSTED_PROXIES
// still does not make the world local.
func directLoopback(r *http.Request) bool {
	if r.Header.Get("X-Forwarded-For") != "" || r.Header.Get("X-Forwarded-Proto") != "" || r.Header.Get("Forwarded") != "" {
		return false
	}
	peer, ok := peerAddr(r)
	return ok && peer.IsLoopback() && loopbackName(r.Host)
}

// loopbackName reports whether a Host header names this machine:
// localhost or a loopback address, with any port.
func loopbackName(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// requestLog gives every request an id (X-Request-Id, kept when a proxy set
// a sane one) and logs one structured line per request. Query strings are
// left out: share tokens and setup links travel in paths and queries, and
// secrets never reach a log line.
func requestLog(log *slog.Logger) []echo.MiddlewareFunc {
	return []echo.MiddlewareFunc{
		func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error {
				start := time.Now()
				id := c.Request().Header.Get(echo.HeaderXRequestID)
				if !saneRequestID(id) {
					id = newRequestID()
				}
				c.Response().Header().Set(echo.HeaderXRequestID, id)
				err := next(c)
				if err != nil {
					c.Error(err)
				}
				r := c.Request()
				level := slog.LevelDebug
				if c.Response().Status >= 500 {
					level = slog.LevelError
				}
				log.Log(r.Context(), level, "http request",
					"request_id", id,
					"method", r.Method,
					"path", redactPath(c),
					"status", c.Response().Status,
					"bytes", c.Response().Size,
					"took", time.Since(start).Round(time.Microsecond),
					"client", ClientAddr(r))
				return nil
			}
		},
	}
}

// redactPath logs the route pattern for paths that carry secrets (share
// links and every route under one, setup tokens) and the real path
// otherwise.
func redactPath(c echo.Context) string {
	if strings.Contains(c.Path(), ":token") {
		return c.Path()
	}
	return c.Request().URL.Path
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// saneRequestID accepts a proxy's id when it is short and printable, so a
// client cannot inject into log lines.
func saneRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}
