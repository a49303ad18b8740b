// Package web is the HTTP side of Harness: the echo server, its routes, page
// handlers, the REST API, authentication middleware and CSRF protection.
package web

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/labstack/echo/v4"

	"harness/internal/auth"
	"harness/internal/service"
	"harness/web/static"
)

// Pinger answers whether the database is reachable and takes writes
// (readiness).
type Pinger interface {
	Ping(ctx context.Context) error
	Writable(ctx context.Context) error
}

// Deps are the server's dependencies, passed explicitly.
type Deps struct {
	Log *slog.Logger
	DB  Pinger
	// Auth is accounts and access control. Nil serves only the health
	// routes and static files (tests of those).
	Auth *auth.Service
	// TrustedOrigins are extra origins allowed to open the WebSocket.
	TrustedOrigins []string
	// TrustedProxies are the peers whose X-Forwarded-For and
	// X-Forwarded-Proto are believed (client.go); none: the TCP peer is
	// the client.
	TrustedProxies []netip.Prefix
	// Service is the session service behind the REST API; nil serves no
	// session routes. Concrete: the handlers use nearly all of it, so an
	// interface would only restate it (docs/architecture.md).
	Service *service.Service
	// WS serves the WebSocket at /ws (the ws hub); nil serves no socket.
	WS http.Handler
	// UI is what the browser pages need (see pages_deps.go); nil serves
	// no pages beyond the account ones.
	UI *UIDeps
	// Metrics serves /metrics (Prometheus); nil serves none.
	Metrics http.Handler
	// MetricsToken lets a scraper read /metrics with "Authorization:
	// Bearer <token>" and no session (HARNESS_METRICS_TOKEN); "" lets
	// none. A secret: compared in constant time, never logged.
	MetricsToken string
	// Forwards counts the requests forwarded to a session's owner
	// (forward.go); nil counts none.
	Forwards ForwardCounter
	// ReplicaID is this replica's id when several share a PostgreSQL
	// database: REST commands for sessions another replica owns are
	// forwarded there (forward.go). "" when this process owns every
	// session.
	ReplicaID string
	// TakeoverWait bounds how long a command for a session whose owner
	// cannot be reached waits for the session to move (the lease TTL).
	TakeoverWait time.Duration
	// WhileOwner returns a context that ends when the replica at addr no
	// longer holds the session's lease (a forwarded command then waits
	// for the next owner instead of a paused one); nil: no such check.
	WhileOwner func(ctx context.Context, session, addr string) (context.Context, context.CancelFunc)
	// Replicas serves the signed requests of the other replicas under
	// /internal/replica/ (internal/replica); nil serves none.
	Replicas http.Handler
	// Draining reports a graceful stop under way: /readyz answers 503
	// "draining" (app.App.Drain). nil: never.
	Draining func() bool
}

// Server is the echo application.
type Server struct {
	e   *echo.Echo
	log *slog.Logger
	db  Pinger
	// draining reports a graceful stop under way (Deps.Draining).
	draining func() bool
	auth     *auth.Service
	trusted  []string
	proxies  proxies
	svc      *service.Service
	ws       http.Handler
	ui       *UIDeps
	metrics  http.Handler
	// metricsToken is the SHA-256 of Deps.MetricsToken (nil: none), so
	// the comparison's time depends on neither token's length.
	metricsToken []byte

	replicaID string
	forwards  ForwardCounter
	// readOwner carries the reads forwarded to a session's owner
	// (forward.go).
	readOwner http.RoundTripper
	// takeoverWait: Deps.TakeoverWait.
	takeoverWait time.Duration
	whileOwner   func(ctx context.Context, session, addr string) (context.Context, context.CancelFunc)
}

// New builds the server and registers every route.
func New(d Deps) *Server {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	s := &Server{e: e, log: d.Log, db: d.DB, auth: d.Auth, trusted: d.TrustedOrigins, proxies: d.TrustedProxies, svc: d.Service, ws: d.WS, ui: d.UI, metrics: d.Metrics, replicaID: d.ReplicaID, takeoverWait: d.TakeoverWait, whileOwner: d.WhileOwner, readOwner: readTransport(), forwards: d.Forwards, draining: d.Draining}
	if d.MetricsToken != "" {
		sum := sha256.Sum256([]byte(d.MetricsToken))
		s.metricsToken = sum[:]
	}
	e.HTTPErrorHandler = s.handleError
	// First: everything after them asks who the client is, and may read
	// the body.
	e.Pre(s.resolveClient, s.limitBodies)
	e.Use(requestLog(d.Log)...)
	s.routes()
	if d.Replicas != nil {
		// Signed by the replicas (internal/replica checks): no user auth.
		e.Any("/internal/replica/*", echo.WrapHandler(d.Replicas))
	}
	return s
}

// Handler is the server's http.Handler.
func (s *Server) Handler() http.Handler { return s.e }

func (s *Server) routes() {
	s.e.GET("/healthz", s.healthz)
	s.e.GET("/readyz", s.readyz)
	s.e.StaticFS("/static", static.FS)
	if s.auth != nil {
		s.authRoutes()
		s.opsRoutes()
		s.apiRoutes()
		if s.ui != nil && s.svc != nil {
			s.pageRoutes()
		}
	}
}
