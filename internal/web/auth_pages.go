package web

import (
	"errors"
	"net/http"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"harness/internal/auth"
	"harness/web/templates"
)

// renderComponent writes a templ page. Pages carry per-user data and
// tokens: never cached, never framed, and no Referer (share and setup
// links hold secrets in their path).
func renderComponent(c echo.Context, status int, comp templ.Component) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	c.Response().WriteHeader(status)
	return comp.Render(c.Request().Context(), c.Response())
}

func (s *Server) errorPage(c echo.Context, status int, title, msg string) error {
	return renderComponent(c, status, templates.ErrorPage(templates.ErrorView{Status: status, Title: title, Message: msg}))
}

// home is the start page of a server without the UI.
func (s *Server) home(c echo.Context) error {
	a := ActorFrom(c)
	return renderComponent(c, http.StatusOK, templates.HomePage(templates.HomeView{
		Name: a.Name, DisplayName: a.DisplayName, Admin: a.IsAdmin(), CSRF: CSRFToken(c),
	}))
}

// sharePage answers a share link on a server without the UI. Unknown,
// revoked and expired links all answer 404.
func (s *Server) sharePage(c echo.Context) error {
	ctx := c.Request().Context()
	a, err := s.auth.ShareActor(ctx, c.Param("token"))
	if err == nil {
		_, err = s.auth.Authorize(ctx, a, a.ShareSessionID, auth.ActionRead)
	}
	switch {
	case errors.Is(err, auth.ErrNotFound), errors.Is(err, auth.ErrUnauthenticated):
		return s.errorPage(c, http.StatusNotFound, "Link not valid", "This share link does not exist, was revoked or has expired.")
	case err != nil:
		return err
	}
	return renderComponent(c, http.StatusOK, templates.SharePage(templates.ShareView{SessionID: a.ShareSessionID}))
}

// meResponse is GET /api/me.
type meResponse struct {
	User *auth.Actor `json:"user"`
}

// apiMe tells a script or the browser who it is signed in as.
func (s *Server) apiMe(c echo.Context) error {
	return c.JSON(http.StatusOK, meResponse{User: ActorFrom(c)})
}
