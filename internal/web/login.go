package web

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

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

// safeNext keeps a redirect (after login, back to a list) on this site:
// a path starting with one "/" that no reading turns into another host.
// Browsers drop tabs and newlines from a Location and read a backslash as
// "/", so "/<tab>/evil.example" and "/\evil.example" lead off-site just as
// "//evil.example" does, and a target may be decoded again on its way.
// So the target must hold no control character, whitespace, backslash or
// "//", nor may its path (before any query) once or twice percent-decoded;
// anything else answers "/".
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || !plainPath(next) {
		return "/"
	}
	s, _, _ := strings.Cut(next, "?")
	s, _, _ = strings.Cut(s, "#")
	for range 3 {
		d, err := url.PathUnescape(s)
		if err != nil || !plainPath(d) {
			return "/"
		}
		if d == s {
			return next
		}
		s = d
	}
	return "/" // still encoded after three decodings: no page of ours
}

// plainPath reports whether s has none of what makes a browser leave the
// site: "//", a backslash, control characters, whitespace, or bytes that
// are not UTF-8.
func plainPath(s string) bool {
	if strings.Contains(s, "//") || strings.ContainsRune(s, '\\') {
		return false
	}
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

func (s *Server) loginPage(c echo.Context) error {
	next := safeNext(c.QueryParam("next"))
	if ActorFrom(c).IsUser() {
		return c.Redirect(http.StatusSeeOther, next)
	}
	return s.renderLogin(c, http.StatusOK, templates.LoginView{Next: next, Notice: flash(c)})
}

func (s *Server) renderLogin(c echo.Context, status int, v templates.LoginView) error {
	v.CSRF = preLoginToken(c)
	// A fresh install's login page says how to make the first account
	// (nobody can sign in yet).
	setup, err := s.auth.NeedsSetup(c.Request().Context())
	if err != nil {
		s.log.WarnContext(c.Request().Context(), "login page: count users", "err", err)
	}
	v.Setup = setup
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
