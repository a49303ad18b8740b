package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// POST /api/sessions/:id/compact (no body, or {}) → 200 {compacted,
// compactionId?, commandId, replaced, tokensSaved, message, context}: the
// history but its newest exchange is summarized now. 409 busy while the
// agent works; 502 compaction_failed when the summary could not be made.
func (s *Server) apiCompact(c echo.Context) error {
	var req struct{}
	if err := bindJSON(c, &req, true); err != nil {
		return err
	}
	res, err := s.svc.Compact(c.Request().Context(), ActorFrom(c), c.Param("id"))
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, res)
}
