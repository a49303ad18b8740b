package web

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"harness/internal/auth"
	"harness/web/templates"
)

// maxFormBytes bounds the anonymous forms' bodies.
const maxFormBytes = 16 << 10

// Login page messages: one generic message for every credential failure,
// so the page never tells whether a name exists.
const (
	msgBadCredentials = "Invalid name or password."
	msgFormExpired    = "The form expired. Please try again."
)

// safeNext keeps a post-login redirect on this site: a local absolute path,
// not "//host" or "/\host" (which browsers treat as another host).
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") ||
		strings.ContainsAny(next, "\r\n") {
		return "/"
	}
	return next
}

func (s *Server) loginPage(c echo.Context) error {
	next := safeNext(c.QueryParam("next"))
	if ActorFrom(c).IsUser() {
		return c.Redirect(http.StatusSeeOther, next)
	}
	return s.renderLogin(c, http.StatusOK, templates.LoginView{Next: next})
}

func (s *Server) renderLogin(c echo.Context, status int, v templates.LoginView) error {
	v.CSRF = preLoginToken(c)
	return renderComponent(c, status, templates.LoginPage(v))
}

func (s *Server) loginSubmit(c echo.Context) error {
	r := c.Request()
	r.Body = http.MaxBytesReader(c.Response(), r.Body, maxFormBytes)
	next := safeNext(c.FormValue("next"))
	name := c.FormValue("name")
	if !checkPreLogin(c) {
		return s.renderLogin(c, http.StatusForbidden, templates.LoginView{Name: name, Next: next, Error: msgFormExpired})
	}
	cookie, info, err := s.auth.Login(r.Context(), name, c.FormValue("password"), ClientAddr(r), r.UserAgent())
	var rl *auth.RateLimitError
	switch {
	case errors.As(err, &rl):
		secs := int(math.Ceil(rl.RetryAfter.Seconds()))
		c.Response().Header().Set("Retry-After", fmt.Sprint(secs))
		msg := fmt.Sprintf("Too many failed attempts. Try again in %d seconds.", secs)
		return s.renderLogin(c, http.StatusTooManyRequests, templates.LoginView{Name: name, Next: next, Error: msg})
	case errors.Is(err, auth.ErrInvalidCredentials):
		return s.renderLogin(c, http.StatusUnauthorized, templates.LoginView{Name: name, Next: next, Error: msgBadCredentials})
	case err != nil:
		return err
	}
	// A login replaces the browser's previous login session, if any.
	if old, err := c.Cookie(sessionCookie); err == nil {
		if err := s.auth.Logout(r.Context(), old.Value); err != nil {
			s.log.WarnContext(r.Context(), "end previous login session", "err", err)
		}
	}
	setSessionCookie(c, cookie, info.ExpiresAt, info.CreatedAt)
	return c.Redirect(http.StatusSeeOther, next)
}

// logout ends the login session (the CSRF guard has checked the token).
func (s *Server) logout(c echo.Context) error {
	if ck, err := c.Cookie(sessionCookie); err == nil {
		if err := s.auth.Logout(c.Request().Context(), ck.Value); err != nil {
			return err
		}
	}
	clearCookie(c, sessionCookie)
	return c.Redirect(http.StatusSeeOther, "/login")
}
