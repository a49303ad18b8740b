package web

import (
	"fmt"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"harness/internal/auth"
	"harness/internal/service"
)

// POST /api/sessions {title?, provider?, model?, mode?} → 201 session.
func (s *Server) apiCreateSession(c echo.Context) error {
	var req service.NewSession
	if err := bindJSON(c, &req, true); err != nil {
		return err
	}
	sess, err := s.svc.CreateSession(c.Request().Context(), ActorFrom(c), req)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusCreated, sess)
}

// GET /api/sessions?q=&archived=true|false&limit=&cursor= → {sessions, next}.
func (s *Server) apiListSessions(c echo.Context) error {
	q := service.ListQuery{Q: c.QueryParam("q"), Cursor: c.QueryParam("cursor")}
	switch v := c.QueryParam("archived"); v {
	case "", "all":
	case "true", "false":
		b := v == "true"
		q.Archived = &b
	default:
		return service.NewError(service.CodeBadRequest, "archived must be true, false or all")
	}
	limit, err := queryInt64(c, "limit", 0)
	if err != nil {
		return err
	}
	q.Limit = int(limit)
	list, err := s.svc.ListSessions(c.Request().Context(), ActorFrom(c), q)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, list)
}

// GET /api/sessions/:id → session.
func (s *Server) apiGetSession(c echo.Context) error {
	sess, err := s.svc.GetSession(c.Request().Context(), ActorFrom(c), c.Param("id"))
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, sess)
}

// PATCH /api/sessions/:id {title?, archived?, mode?, provider?, model?} → session.
func (s *Server) apiPatchSession(c echo.Context) error {
	var p service.Patch
	if err := bindJSON(c, &p, false); err != nil {
		return err
	}
	sess, err := s.svc.UpdateSession(c.Request().Context(), ActorFrom(c), c.Param("id"), p)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, sess)
}

// DELETE /api/sessions/:id → 204.
func (s *Server) apiDeleteSession(c echo.Context) error {
	if err := s.svc.DeleteSession(c.Request().Context(), ActorFrom(c), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// GET /api/sessions/:id/events?since=N&limit=M → {events, head}.
func (s *Server) apiEvents(c echo.Context) error {
	since, err := queryInt64(c, "since", -1)
	if err != nil {
		return err
	}
	limit, err := queryInt64(c, "limit", 0)
	if err != nil {
		return err
	}
	return s.writeEvents(c, ActorFrom(c), c.Param("id"), since, limit)
}

// writeEvents answers an events page of session id for a (the REST API,
// and a share link's page route: the timeline panel reads it).
func (s *Server) writeEvents(c echo.Context, a *auth.Actor, id string, since, limit int64) error {
	started := false
	err := s.svc.WriteEvents(c.Request().Context(), a, id, since, int(limit), func() io.Writer {
		started = true
		h := c.Response().Header()
		h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		h.Set("Cache-Control", "no-store")
		c.Response().WriteHeader(http.StatusOK)
		return c.Response()
	})
	if err != nil && started {
		// The status is sent; cut the response so the client sees a
		// broken page rather than a short, valid-looking one.
		s.log.Error("events page failed mid-stream", "session", id, "err", err)
		panic(http.ErrAbortHandler)
	}
	return err
}

// GET /api/sessions/:id/export → the log as JSON lines.
func (s *Server) apiExport(c echo.Context) error {
	id := c.Param("id")
	w := &lazyWriter{c: c, start: func(res *echo.Response) {
		h := res.Header()
		h.Set(echo.HeaderContentType, "application/x-ndjson")
		h.Set(echo.HeaderContentDisposition, fmt.Sprintf("attachment; filename=%q", "session-"+id+".jsonl"))
		h.Set("Cache-Control", "no-store")
		res.WriteHeader(http.StatusOK)
	}}
	if err := s.svc.Export(c.Request().Context(), ActorFrom(c), id, w); err != nil {
		if w.started {
			// The status is sent; cut the stream so the client sees an
			// incomplete download rather than a short, valid-looking one.
			s.log.Error("export failed mid-stream", "session", id, "err", err)
			panic(http.ErrAbortHandler)
		}
		return err
	}
	if !w.started {
		w.start(c.Response())
	}
	return nil
}

// lazyWriter sends the response headers on the first write, so an error
// before any output can still be a JSON error.
type lazyWriter struct {
	c       echo.Context
	start   func(*echo.Response)
	started bool
}

func (w *lazyWriter) Write(p []byte) (int, error) {
	if !w.started {
		w.started = true
		w.start(w.c.Response())
	}
	return w.c.Response().Write(p)
}

// POST /api/sessions/:id/fork {atSeq?} → 201 the new session.
func (s *Server) apiFork(c echo.Context) error {
	var req struct {
		AtSeq *int64 `json:"atSeq"`
	}
	if err := bindJSON(c, &req, true); err != nil {
		return err
	}
	sess, err := s.svc.Fork(c.Request().Context(), ActorFrom(c), c.Param("id"), req.AtSeq)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/sessions/"+sess.ID)
	return writeJSON(c, http.StatusCreated, sess)
}

// GET /api/providers → {default, providers}.
func (s *Server) apiProviders(c echo.Context) error {
	p, err := s.svc.Providers(c.Request().Context(), ActorFrom(c))
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, p)
}
