package web

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"harness/internal/auth"
	"harness/web/templates"
)

// msgSetupGone answers a setup link that is not the live one while no
// account exists (a link replaced by a restart, or mistyped).
const msgSetupGone = "This setup link is not valid: each start of the server makes a new one and prints it in its log. Open the newest link, or set HARNESS_ADMIN_PASSWORD and restart the server."

// setupPage shows the first-admin form for a live setup link.
func (s *Server) setupPage(c echo.Context) error {
	tok := c.Param("token")
	ok, err := s.auth.SetupValid(c.Request().Context(), tok)
	if err != nil {
		return err
	}
	if !ok {
		return s.setupGone(c)
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
		return s.setupGone(c)
	case err != nil:
		return err
	}
	setSessionCookie(c, cookie, info.ExpiresAt, info.CreatedAt)
	return c.Redirect(http.StatusSeeOther, "/")
}

// setupGone answers a setup link that is not live: once an account exists
// (the link was used, or HARNESS_ADMIN_PASSWORD made the admin) setup is
// done and the login page says so; before that the link is stale and the
// page says where the live one is.
func (s *Server) setupGone(c echo.Context) error {
	fresh, err := s.auth.NeedsSetup(c.Request().Context())
	if err != nil {
		return err
	}
	if !fresh {
		return c.Redirect(http.StatusSeeOther, withFlash("/login", flashSetupDone))
	}
	return s.errorPage(c, http.StatusNotFound, "Link not valid", msgSetupGone)
}
