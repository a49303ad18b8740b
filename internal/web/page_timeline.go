package web

import (
	"github.com/labstack/echo/v4"

	"harness/internal/service"
)

// GET /s/:token/events?since=N&limit=M — a share link's session events, as
// GET /api/sessions/:id/events answers them: the timeline panel of the
// viewer page computes its strip from them (signed-in readers use the REST
// route). Unknown, revoked and expired links answer 404.
func (s *Server) pageShareEvents(c echo.Context) error {
	a, ok, err := s.shareActor(c.Request().Context(), c.Param("token"))
	if !ok {
		return service.NewError(service.CodeNotFound, "share link is not valid")
	}
	if err != nil {
		return err
	}
	since, err := queryInt64(c, "since", -1)
	if err != nil {
		return err
	}
	limit, err := queryInt64(c, "limit", 0)
	if err != nil {
		return err
	}
	return s.writeEvents(c, a, a.ShareSessionID, since, limit)
}
