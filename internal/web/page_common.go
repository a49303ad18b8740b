package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"harness/internal/auth"
	"harness/internal/llm"
	"harness/internal/render"
	"harness/internal/routes"
	"harness/internal/service"
	"harness/web/templates"
)

// sidebarSessions is how many recent sessions the sidebar lists.
const sidebarSessions = 30

// nav builds the frame of a signed-in page.
func (s *Server) nav(c echo.Context, page, active string) *templates.Nav {
	a := ActorFrom(c)
	n := &templates.Nav{User: displayOf(a), UserName: a.Name, Admin: a.IsAdmin(), CSRF: CSRFToken(c), Page: page, Active: active}
	archived := false
	list, err := s.svc.ListSessions(c.Request().Context(), a, service.ListQuery{Archived: &archived, Limit: sidebarSessions})
	if err != nil {
		s.log.WarnContext(c.Request().Context(), "sidebar sessions", "err", err)
		return n
	}
	for _, r := range list.Sessions {
		n.Sessions = append(n.Sessions, templates.SessionLink{ID: r.ID, Title: r.Title, Status: string(r.Status)})
	}
	return n
}

func displayOf(a *auth.Actor) string {
	if a == nil {
		return ""
	}
	if a.DisplayName != "" {
		return a.DisplayName
	}
	return a.Name
}

// pageError renders a service error as an error page with its status. A
// session the user may not read is "not found" (its existence never
// leaks); one they may read but not change is "forbidden".
func (s *Server) pageError(c echo.Context, err error) error {
	e := service.AsError(err)
	status := e.Code.HTTPStatus()
	switch e.Code {
	case service.CodeNotFound:
		return s.errorPage(c, status, "Session not found", "This session does not exist, or you do not have access to it.")
	case service.CodeForbidden:
		return s.errorPage(c, status, "Not allowed", "You may look at this session but not change it. Ask its owner for access.")
	case service.CodeUnauthorized:
		return s.unauthenticated(c)
	case service.CodeInternal:
		s.log.ErrorContext(c.Request().Context(), "page failed", "path", c.Request().URL.Path, "err", err)
		return s.errorPage(c, status, "Something went wrong", "The server could not do that. Try again in a moment.")
	}
	return s.errorPage(c, status, "That did not work", sentence(e.Message))
}

// sentence capitalises a message and ends it with a period.
func sentence(m string) string {
	if m == "" {
		return m
	}
	m = strings.ToUpper(m[:1]) + m[1:]
	if !strings.HasSuffix(m, ".") {
		m += "."
	}
	return m
}

// redirect answers a form post with 303 See Other.
func redirect(c echo.Context, to string) error { return c.Redirect(http.StatusSeeOther, to) }

// flashKey names a message a page shows after a redirect. Only the key
// travels in the URL: a URL that carried the text would let anyone who
// sends a link put their words in our status banner.
type flashKey string

// Flash keys.
const (
	flashNone            flashKey = ""
	flashSessionArchived flashKey = "session-archived"
	flashSessionRestored flashKey = "session-restored"
	flashSessionDeleted  flashKey = "session-deleted"
	flashImportTooLarge  flashKey = "import-too-large"
	flashImportNoFile    flashKey = "import-no-file"
	flashPrefsSaved      flashKey = "prefs-saved"
	flashDefaultSaved    flashKey = "default-saved"
	flashRouteSaved      flashKey = "route-saved"
	flashRouteDeleted    flashKey = "route-deleted"
	flashRootSaved       flashKey = "root-saved"
	flashRootRemoved     flashKey = "root-removed"
	flashHostsSaved      flashKey = "hosts-saved"
	flashNetworkSaved    flashKey = "network-saved"
	flashFetchHostsSaved flashKey = "fetch-hosts-saved"
	flashMCPSaved        flashKey = "mcp-saved"
	flashMCPDeleted      flashKey = "mcp-deleted"
	flashUserCreated     flashKey = "user-created"
	flashRoleChanged     flashKey = "role-changed"
	flashUserEnabled     flashKey = "user-enabled"
	flashUserDisabled    flashKey = "user-disabled"
	flashPasswordReset   flashKey = "password-reset"
	flashSetupDone       flashKey = "setup-done"
)

// flashMessages are the messages of the keys. They name no user or route:
// the page below the banner shows which one changed.
var flashMessages = map[flashKey]string{
	flashSessionArchived: "Session archived.",
	flashSessionRestored: "Session restored from the archive.",
	flashSessionDeleted:  "Session deleted.",
	flashImportTooLarge:  "Import failed: the file is larger than 64 MiB.",
	flashImportNoFile:    "Choose a session log (.jsonl) to import.",
	flashPrefsSaved:      "Saved. New sessions use these settings.",
	flashDefaultSaved:    "The default model is saved.",
	flashRouteSaved:      "The route is saved.",
	flashRouteDeleted:    "The route is deleted.",
	flashRootSaved:       "The workspace root is saved.",
	flashRootRemoved:     "The workspace root is removed.",
	flashHostsSaved:      "The clone hosts are saved.",
	flashNetworkSaved:    "Network access is saved.",
	flashFetchHostsSaved: "The web fetch hosts are saved.",
	flashMCPSaved:        "The MCP server is saved; sessions use it from their next step.",
	flashMCPDeleted:      "The MCP server is removed.",
	flashUserCreated:     "User created.",
	flashRoleChanged:     "Role changed.",
	flashUserEnabled:     "User enabled.",
	flashUserDisabled:    "User disabled; their sessions in browsers have ended.",
	flashPasswordReset:   "Password reset; they must sign in again.",
	flashSetupDone:       "Setup is already done: an account exists. Sign in.",
}

// withFlash adds a message's key to a redirect target (none for flashNone).
func withFlash(path string, key flashKey) string {
	if key == flashNone {
		return path
	}
	return path + "?flash=" + url.QueryEscape(string(key))
}

// flash is the message a redirect asked for; an unknown key shows nothing.
func flash(c echo.Context) string {
	return flashMessages[flashKey(c.QueryParam("flash"))]
}

// modelOptions lists every route's models for a picker; selected is
// "provider/model".
func (s *Server) modelOptions(selected string) []templates.ModelOption {
	var out []templates.ModelOption
	for _, p := range s.ui.Routes.Available() {
		models := p.Models
		if len(models) == 0 {
			models = []llm.ModelInfo{{ID: p.DefaultModel, Label: p.DefaultModel}}
		}
		for _, m := range models {
			v := p.Name + "/" + m.ID
			out = append(out, templates.ModelOption{Value: v, Label: modelLabel(p, m.ID), Selected: v == selected, Offline: p.Offline})
		}
	}
	return out
}

// modelLabel is what a route and model are called in the UI (render names
// it for the live header the same way).
func modelLabel(p llm.ProviderInfo, model string) string {
	label, _ := render.RouteLabel(p, true, p.Name, model)
	return label
}

// routeLabel labels a session's route; an unknown provider says so.
func (s *Server) routeLabel(provider, model string) (label string, offline bool, window int64) {
	info, ok := s.ui.Routes.Lookup(provider)
	label, offline = render.RouteLabel(info, ok, provider, model)
	if ok {
		window = info.Model(model).ContextWindow
	}
	return label, offline, window
}

// parseRoute splits "provider/model".
func parseRoute(v string) (provider, model string) {
	provider, model, _ = strings.Cut(v, "/")
	return provider, model
}

// userPrefs reads the actor's preferences; failures fall back to none.
func (s *Server) userPrefs(ctx context.Context, a *auth.Actor) routes.Prefs {
	p, err := s.ui.Routes.Prefs(ctx, a.UserID)
	if err != nil {
		s.log.WarnContext(ctx, "read user preferences", "err", err)
	}
	return p
}
