package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// sessionCookie holds the login session's secret (its hash is the row id).
const sessionCookie = "harness_session"

// setCookie sets a cookie with the flags every Harness cookie has:
// Path=/, HttpOnly, SameSite=Lax, and Secure over HTTPS.
func setCookie(c echo.Context, ck *http.Cookie) {
	ck.Path = "/"
	ck.HttpOnly = true
	ck.SameSite = http.SameSiteLaxMode
	ck.Secure = isHTTPS(c.Request())
	c.SetCookie(ck)
}

// setSessionCookie sets the login cookie to live until the absolute expiry.
func setSessionCookie(c echo.Context, value string, expires, now time.Time) {
	setCookie(c, &http.Cookie{
		Name: sessionCookie, Value: value,
		Expires: expires, MaxAge: int(expires.Sub(now).Seconds()),
	})
}

func clearCookie(c echo.Context, name string) {
	setCookie(c, &http.Cookie{Name: name, Value: "", MaxAge: -1, Expires: time.Unix(0, 0)})
}
