package web

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"harness/internal/auth"
	"harness/web/templates"
)

const msgSetupGone = "This setup link is not valid. It works once, and only until the first account exists; restart the server for a new one."

// setupPage shows the first-admin form for a live setup link.
func (s *Server) setupPage(c echo.Context) error {
	tok := c.Param("token")
	ok, err := s.auth.SetupValid(c.Request().Context(), tok)
	if err != nil {
		return err
	}
	if !ok {
		return s.errorPage(c, http.StatusNotFound, "Link not valid", msgSetupGone)
	}
	return s.renderSetup(c, http.StatusOK, templates.SetupView{Token: tok, Name: auth.BootstrapAdmin})
}

func (s *Server) renderSetup(c echo.Context, status int, v templates.SetupView) error {
	v.CSRF = preLoginToken(c)
	return renderComponent(c, status, templates.SetupPage(v))
}

// setupSubmit creates the first admin, consumes the link and logs them in.
func (s *Server) setupSubmit(c echo.Context) error {
	r := c.Request()
	r.Body = http.MaxBytesReader(c.Response(), r.Body, maxFormBytes)
	tok := c.Param("token")
	v := templates.SetupView{Token: tok, Name: c.FormValue("name")}
	if !checkPreLogin(c) {
		v.Error = msgFormExpired
		return s.renderSetup(c, http.StatusForbidden, v)
	}
	pw := c.FormValue("password")
	if pw != c.FormValue("confirm") {
		v.Error = "The passwords do not match."
		return s.renderSetup(c, http.StatusBadRequest, v)
	}
	cookie, info, err := s.auth.CompleteSetup(r.Context(), tok, v.Name, pw, ClientAddr(r), r.UserAgent())
	var in *auth.InputError
	switch {
	case errors.As(err, &in):
		v.Error = "Please fix: " + in.Reason + "."
		return s.renderSetup(c, http.StatusBadRequest, v)
	case errors.Is(err, auth.ErrNotFound):
		return s.errorPage(c, http.StatusNotFound, "Link not valid", msgSetupGone)
	case err != nil:
		return err
	}
	setSessionCookie(c, cookie, info.ExpiresAt, info.CreatedAt)
	return c.Redirect(http.StatusSeeOther, "/")
}
