package web

import (
	"context"
	"net/http"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"harness/internal/llm"
	"harness/internal/mcp"
	"harness/internal/render"
	"harness/internal/routes"
	"harness/internal/session"
)

// UIDeps are what the browser pages need beyond the session service.
type UIDeps struct {
	// Store reads history pages (TailPage) cut on message boundaries.
	Store History
	// Markdown folds events into transcript items (and renders markdown
	// and code). It stays concrete: the fold is the transcript's one
	// projection (render.Projection), not a seam to swap.
	Markdown *render.Markdown
	// Routes are the model routes and users' preferences (routes.Routes).
	Routes Routes
	// Figures keeps the sessions' footer figures, shared with the live
	// projections (nil: the page folds the stored log each time).
	Figures *render.FigureBook
	// MCP reports and changes the MCP servers for Settings (nil: none).
	MCP MCPServers
}

// MCPServers reports the configured MCP servers and the live sessions'
// connections, and adds, edits and removes those of Settings
// (mcp.Manager).
type MCPServers interface {
	Status() []mcp.ServerStatus
	Stored(ctx context.Context) ([]mcp.StoredView, error)
	Save(ctx context.Context, f mcp.Form) error
	Delete(ctx context.Context, name string) error
}

// History reads a session's stored events a page at a time, cut on
// message boundaries (models.Store).
type History interface {
	TailPage(ctx context.Context, sessionID string, before int64, maxMessages int) ([]session.Event, bool, error)
	// EventsSince reads at most limit events with seq > since (the
	// footer's figures fold them).
	EventsSince(ctx context.Context, sessionID string, since int64, limit int) ([]session.Event, error)
}

// RouteCatalog describes the live model routes, for pickers and labels.
type RouteCatalog interface {
	Available() []llm.ProviderInfo
	Lookup(name string) (llm.ProviderInfo, bool)
	Default() (provider, model string)
	// Preferred is the route a new session of someone with p starts on.
	Preferred(p routes.Prefs) (provider, model string)
}

// RouteAdmin lists and changes the model routes (the admin's settings);
// refusals are *routes.InputError.
type RouteAdmin interface {
	List(ctx context.Context) ([]routes.Route, error)
	Save(ctx context.Context, f routes.Form) (name string, err error)
	Delete(ctx context.Context, name string) error
	SetDefault(ctx context.Context, provider, model string) error
	// Test sends one tiny request through a stored route: nil, a
	// provider *llm.Failure, or a refusal (*routes.InputError).
	Test(ctx context.Context, name string) error
}

// Preferences keeps users' defaults for new sessions; refusals are
// *routes.InputError.
type Preferences interface {
	Prefs(ctx context.Context, userID string) (routes.Prefs, error)
	SavePrefs(ctx context.Context, userID string, p routes.Prefs) error
}

// Routes is what the pages use of internal/routes, in one value.
type Routes interface {
	RouteCatalog
	RouteAdmin
	Preferences
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
