package web

import (
	"net/http"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"harness/internal/models"
	"harness/internal/render"
)

// UIDeps are what the browser pages need beyond the session service.
type UIDeps struct {
	// Store reads history pages (TailPage) cut on message boundaries.
	Store *models.Store
	// Render folds events into transcript items (and renders markdown).
	Render *render.Renderer
	// Routes applies and stores model routes and preferences (settings).
	Routes *ModelRoutes
}

// contentSecurityPolicy forbids inline scripts and styles and every
// foreign origin: a model's text that somehow became markup still cannot
// run or load anything.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// securityHeaders adds the CSP and friends to every page and fragment (not
// to the API or the socket).
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p := c.Request().URL.Path
		if !isAPIPath(p) && !strings.HasPrefix(p, "/static/") {
			h := c.Response().Header()
			h.Set("Content-Security-Policy", contentSecurityPolicy)
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Cross-Origin-Opener-Policy", "same-origin")
		}
		return next(c)
	}
}

// renderFragment writes an HTML fragment (history pages), never cached.
func renderFragment(c echo.Context, comp templ.Component) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	h.Set("Cache-Control", "no-store")
	c.Response().WriteHeader(http.StatusOK)
	return comp.Render(c.Request().Context(), c.Response())
}
