package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// GET /api/sandbox → what confines tool processes; for admins also the
// workspace roots, clone hosts and route network settings.
func (s *Server) apiSandbox(c echo.Context) error {
	v, err := s.svc.SandboxSettings(c.Request().Context(), ActorFrom(c))
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, v)
}

// GET /api/workspace/roots → the workspace roots the caller may open
// directories under.
func (s *Server) apiWorkspaceRoots(c echo.Context) error {
	roots, err := s.svc.WorkspaceRoots(c.Request().Context(), ActorFrom(c))
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, map[string]any{"roots": roots})
}

// GET /api/workspace/browse?path=/abs/dir → the subdirectories of a root
// (or a directory under one) the caller may use.
func (s *Server) apiWorkspaceBrowse(c echo.Context) error {
	dirs, err := s.svc.BrowseWorkspace(c.Request().Context(), ActorFrom(c), c.QueryParam("path"))
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, map[string]any{"path": c.QueryParam("path"), "dirs": dirs})
}
