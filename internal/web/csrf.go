package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"

	"github.com/labstack/echo/v4"

	"harness/internal/auth"
	"harness/internal/service"
)

// preLoginCookie carries the double-submit token of the anonymous forms
// (login, setup), which have no login session to hold a token.
const preLoginCookie = "harness_csrf"

// csrfExempt are routes whose handlers check the pre-login token instead.
var csrfExempt = map[string]bool{"/login": true, "/setup/:token": true}

func errCSRF() error {
	return service.NewError(service.CodeCSRF, "missing or invalid CSRF token")
}

// csrfGuard requires, on every state-changing request authenticated by the
// login cookie, the session's token in the X-CSRF-Token header or the
// _csrf form field. Bearer-token requests carry no ambient credential and
// are exempt; anonymous requests have nothing to protect (RequireUser
// refuses them).
func (s *Server) csrfGuard(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		a := ActorFrom(c)
		if a == nil || a.Via != auth.ViaCookie || csrfExempt[c.Path()] {
			return next(c)
		}
		if !sameToken(submittedCSRF(c), CSRFToken(c)) {
			return errCSRF()
		}
		return next(c)
	}
}

// submittedCSRF reads the header first so JSON bodies are never parsed.
func submittedCSRF(c echo.Context) string {
	if t := c.Request().Header.Get("X-CSRF-Token"); t != "" {
		return t
	}
	return c.FormValue("_csrf")
}

// sameToken compares in constant time; empty never matches.
func sameToken(got, want string) bool {
	return got != "" && want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// preLoginToken returns the browser's pre-login token, setting a new
// cookie when it has none.
func preLoginToken(c echo.Context) string {
	if ck, err := c.Cookie(preLoginCookie); err == nil && len(ck.Value) == preLoginLen {
		return ck.Value
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	tok := base64.RawURLEncoding.EncodeToString(b)
	setCookie(c, &http.Cookie{Name: preLoginCookie, Value: tok})
	return tok
}

var preLoginLen = base64.RawURLEncoding.EncodedLen(32)

// checkPreLogin verifies an anonymous form's double-submit token.
func checkPreLogin(c echo.Context) bool {
	ck, err := c.Cookie(preLoginCookie)
	if err != nil {
		return false
	}
	return sameToken(c.FormValue("_csrf"), ck.Value)
}
