package web

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"harness/internal/service"
)

// healthz answers as long as the process serves HTTP.
func (s *Server) healthz(c echo.Context) error {
	return c.String(http.StatusOK, "ok")
}

// readyz answers 200 only when the database answers and takes writes, and
// no graceful stop is under way.
func (s *Server) readyz(c echo.Context) error {
	if s.draining != nil && s.draining() {
		// Load balancers stop sending here; everything is still served
		// meanwhile (app.App.Drain).
		return c.String(http.StatusServiceUnavailable, "draining")
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	// A server whose writes fail (a full disk, a write lock another
	// process holds) would take requests it cannot keep; it says so until
	// a write succeeds again. Asked first: it answers from the writer's
	// last outcome, where a ping waits for the write connection, which
	// the writer holds while it waits out a lock.
	if err := s.db.Writable(ctx); err != nil {
		s.log.Warn("readiness: database does not take writes", "err", err)
		msg := "database does not take writes"
		switch {
		case service.DiskFull(err):
			msg += ": disk full"
		case service.WriteLocked(err):
			msg += ": locked by another process"
		}
		return c.String(http.StatusServiceUnavailable, msg)
	}
	if err := s.db.Ping(ctx); err != nil {
		s.log.Warn("readiness: database does not answer", "err", err)
		return c.String(http.StatusServiceUnavailable, "database unavailable")
	}
	return c.String(http.StatusOK, "ready")
}
