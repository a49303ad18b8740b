package web

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"harness/internal/auth"
	"harness/internal/service"
)

// Echo context keys set by resolveActor.
const (
	ctxActor = "harness.actor"
	ctxCSRF  = "harness.csrf"
)

// ActorFrom returns who is asking (nil = anonymous), as resolved for this
// request by the actor middleware.
func ActorFrom(c echo.Context) *auth.Actor {
	a, _ := c.Get(ctxActor).(*auth.Actor)
	return a
}

// CSRFToken is the login session's CSRF token for forms and the
// X-CSRF-Token header; "" unless the actor came from the login cookie.
func CSRFToken(c echo.Context) string {
	t, _ := c.Get(ctxCSRF).(string)
	return t
}

func setActor(c echo.Context, a *auth.Actor, csrf string) {
	c.Set(ctxActor, a)
	c.Set(ctxCSRF, csrf)
	r := c.Request()
	c.SetRequest(r.WithContext(auth.ContextWithActor(r.Context(), a)))
}

// isAPIPath reports the paths where bearer tokens are accepted and
// failures are JSON: the REST API and the WebSocket.
func isAPIPath(p string) bool {
	return p == "/api" || strings.HasPrefix(p, "/api/") || p == "/ws"
}

// bearerToken returns the token of an "Authorization: Bearer" header.
func bearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// resolveActor finds who is asking: on /api and /ws a bearer token first
// (a bad one is refused outright, never downgraded to the cookie); on /ws a
// ?share= link token; then the login cookie; else anonymous. An expired or
// unknown cookie is cleared.
func (s *Server) resolveActor(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		ctx := r.Context()
		if isAPIPath(r.URL.Path) {
			if tok, ok := bearerToken(r); ok {
				a, err := s.auth.TokenActor(ctx, tok)
				if err != nil {
					return err // service.AsError at the edge gives it its code
				}
				setActor(c, a, "")
				return next(c)
			}
		}
		if r.URL.Path == "/ws" {
			// A share-link page's socket: the link decides, even for a
			// logged-in browser, so the page shows what the link shows.
			if tok := r.URL.Query().Get("share"); tok != "" {
				a, err := s.auth.ShareActor(ctx, tok)
				if err != nil {
					if errors.Is(err, auth.ErrNotFound) {
						return service.NewError(service.CodeUnauthorized, "share link is not valid")
					}
					return err
				}
				setActor(c, a, "")
				return next(c)
			}
		}
		if ck, err := c.Cookie(sessionCookie); err == nil && ck.Value != "" {
			a, csrf, err := s.auth.Session(ctx, ck.Value)
			switch {
			case err == nil:
				setActor(c, a, csrf)
				return next(c)
			case errors.Is(err, auth.ErrUnauthenticated):
				clearCookie(c, sessionCookie)
			default:
				return err
			}
		}
		setActor(c, nil, "")
		return next(c)
	}
}

// RequireUser lets real, logged-in users through (cookie or token). Others
// get 401 JSON on /api and /ws and for non-GET requests, and a redirect to
// the login page otherwise.
func (s *Server) RequireUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if ActorFrom(c).IsUser() {
			return next(c)
		}
		return s.unauthenticated(c)
	}
}

// RequireActor lets through any actor, share-link viewers included; the
// handler must still call Authorize for the session it touches.
func (s *Server) RequireActor(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if ActorFrom(c) != nil {
			return next(c)
		}
		return s.unauthenticated(c)
	}
}

// RequireAdmin lets only admins through; other users get 403.
func (s *Server) RequireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return s.RequireUser(func(c echo.Context) error {
		if !ActorFrom(c).IsAdmin() {
			if wantsHTML(c) {
				return s.errorPage(c, http.StatusForbidden, "Forbidden", "This page is for administrators.")
			}
			return service.NewError(service.CodeForbidden, "admin only")
		}
		return next(c)
	})
}

func (s *Server) unauthenticated(c echo.Context) error {
	r := c.Request()
	if wantsHTML(c) && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(r.URL.RequestURI()))
	}
	return service.NewError(service.CodeUnauthorized, "authentication required")
}

// wantsHTML: a browser page, not the API, the socket or a JSON client.
func wantsHTML(c echo.Context) bool {
	r := c.Request()
	return !isAPIPath(r.URL.Path) && r.Header.Get("Accept") != "application/json"
}
