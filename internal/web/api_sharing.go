package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"harness/internal/auth"
)

// GET /api/sessions/:id/members → [member].
func (s *Server) apiMembers(c echo.Context) error {
	ms, err := s.svc.Members(c.Request().Context(), ActorFrom(c), c.Param("id"))
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, ms)
}

// POST /api/sessions/:id/members {name, role: collaborator|viewer} → 204.
func (s *Server) apiAddMember(c echo.Context) error {
	var req struct {
		Name string           `json:"name"`
		Role auth.SessionRole `json:"role"`
	}
	if err := bindJSON(c, &req, false); err != nil {
		return err
	}
	if err := s.svc.AddMember(c.Request().Context(), ActorFrom(c), c.Param("id"), req.Name, req.Role); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// DELETE /api/sessions/:id/members/:name → 204.
func (s *Server) apiRemoveMember(c echo.Context) error {
	if err := s.svc.RemoveMember(c.Request().Context(), ActorFrom(c), c.Param("id"), c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// GET /api/sessions/:id/shares → [link] (tokens are never listed).
func (s *Server) apiShareLinks(c echo.Context) error {
	ls, err := s.svc.ShareLinks(c.Request().Context(), ActorFrom(c), c.Param("id"))
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, ls)
}

// POST /api/sessions/:id/shares {expiresAt?} → 201 {…link, token, path}.
func (s *Server) apiCreateShareLink(c echo.Context) error {
	var req struct {
		ExpiresAt *time.Time `json:"expiresAt"`
	}
	if err := bindJSON(c, &req, true); err != nil {
		return err
	}
	l, err := s.svc.CreateShareLink(c.Request().Context(), ActorFrom(c), c.Param("id"), req.ExpiresAt)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusCreated, l)
}

// DELETE /api/sessions/:id/shares/:link → 204.
func (s *Server) apiRevokeShareLink(c echo.Context) error {
	if err := s.svc.RevokeShareLink(c.Request().Context(), ActorFrom(c), c.Param("id"), c.Param("link")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
