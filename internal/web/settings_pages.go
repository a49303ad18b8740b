package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"harness/internal/render"
	"harness/internal/routes"
	"harness/internal/session"
	"harness/web/templates"
)

// GET /settings
func (s *Server) pageSettings(c echo.Context) error {
	return s.renderSettings(c, http.StatusOK, flash(c), "")
}

func (s *Server) renderSettings(c echo.Context, status int, flashMsg, errMsg string) error {
	ctx := c.Request().Context()
	a := ActorFrom(c)
	prefs := s.userPrefs(ctx, a)
	v := templates.SettingsView{Nav: *s.nav(c, "settings", ""), Flash: flashMsg, Error: errMsg, Mode: string(prefs.Mode)}
	v.Models = s.modelOptions(s.preferredRoute(prefs))
	sb, err := s.sandboxView(c)
	if err != nil {
		return err
	}
	v.Sandbox = sb
	if a.IsAdmin() {
		prov, model := s.ui.Routes.Default()
		v.DefaultModels = s.modelOptions(prov + "/" + model)
		list, err := s.ui.Routes.List(ctx)
		if err != nil {
			return err
		}
		for _, r := range list {
			v.Routes = append(v.Routes, routeView(r))
		}
		if v.MCP, err = s.mcpViews(ctx); err != nil {
			return err
		}
	}
	return renderComponent(c, status, templates.SettingsPage(v))
}

// routeView is a route as the settings page shows it.
func routeView(r routes.Route) templates.RouteView {
	v := templates.RouteView{
		Name: r.Name, Label: r.Label, Kind: string(r.Source), BaseURL: r.BaseURL, KeySet: r.KeySet,
		DefaultModel: r.DefaultModel, Models: strings.Join(r.Models, ", "), Enabled: r.Enabled, Editable: r.Editable(), Offline: r.Offline,
		InputPrice: formatPrice(r.InputPrice), CachedInputPrice: formatPrice(r.CachedInputPrice), OutputPrice: formatPrice(r.OutputPrice),
		ImageInput: r.ImageInput,
	}
	if r.ContextWindow > 0 {
		v.ContextWindow = strconv.FormatInt(r.ContextWindow, 10)
	}
	if r.Source == routes.SourceStored {
		v.Kind = r.Kind
	}
	if r.Offline {
		v.Label = "Offline demo model"
	}
	return v
}

// POST /settings/prefs {route, mode} — the user's defaults for new
// sessions.
func (s *Server) pageSavePrefs(c echo.Context) error {
	p := routes.Prefs{Mode: session.PermissionMode(c.FormValue("mode"))}
	p.Provider, p.Model = parseRoute(c.FormValue("route"))
	if err := s.ui.Routes.SavePrefs(c.Request().Context(), ActorFrom(c).UserID, p); err != nil {
		return s.routesResult(c, err, flashNone)
	}
	return redirect(c, withFlash("/settings", flashPrefsSaved))
}

// routesResult answers a routes form: a refusal re-renders the page with
// its message (400), any other error is the server's.
func (s *Server) routesResult(c echo.Context, err error, ok flashKey) error {
	if err != nil {
		if m := routes.InputMessage(err); m != "" {
			return s.renderSettings(c, http.StatusBadRequest, "", m)
		}
		return err
	}
	return redirect(c, withFlash("/settings", ok))
}

// POST /settings/default {route} — the server's default route (admins).
func (s *Server) pageSaveDefault(c echo.Context) error {
	prov, model := parseRoute(c.FormValue("route"))
	err := s.ui.Routes.SetDefault(c.Request().Context(), prov, model)
	return s.routesResult(c, err, flashDefaultSaved)
}

// POST /settings/providers — adds or edits a route (admins). The API key
// is write-only: an empty field keeps the stored one.
func (s *Server) pageSaveProvider(c echo.Context) error {
	f := routes.Form{
		Name: c.FormValue("name"), Kind: c.FormValue("kind"), BaseURL: c.FormValue("base_url"),
		APIKey: c.FormValue("api_key"), ClearKey: c.FormValue("clear_key") == "1",
		DefaultModel: c.FormValue("default_model"), Models: c.FormValue("models"), Enabled: c.FormValue("enabled") == "1",
		InputPrice: c.FormValue("input_price"), CachedInputPrice: c.FormValue("cached_input_price"),
		OutputPrice: c.FormValue("output_price"), ContextWindow: c.FormValue("context_window"),
		ImageInput: c.FormValue("image_input") == "1",
	}
	_, err := s.ui.Routes.Save(c.Request().Context(), f)
	return s.routesResult(c, err, flashRouteSaved)
}

// POST /settings/providers/:name/delete (admins)
func (s *Server) pageDeleteProvider(c echo.Context) error {
	name := c.Param("name")
	err := s.ui.Routes.Delete(c.Request().Context(), name)
	return s.routesResult(c, err, flashRouteDeleted)
}

// POST /settings/providers/:name/test (admins) — one tiny request through
// the stored route. The page answers 200 either way: the test ran, and its
// outcome (ok, or the provider's coded failure) is the content. The
// message is fenced like a turn's failure (a provider may echo the key).
func (s *Server) pageTestProvider(c echo.Context) error {
	name := c.Param("name")
	err := s.ui.Routes.Test(c.Request().Context(), name)
	if m := routes.InputMessage(err); m != "" {
		return s.renderSettings(c, http.StatusBadRequest, "", m)
	}
	if f := routes.TestFailure(err); f != nil {
		return s.renderSettings(c, http.StatusOK, "", "Route "+name+": the connection test failed: "+string(f.Code)+": "+render.SafeMessage(f.Message))
	}
	return s.renderSettings(c, http.StatusOK, "Route "+name+": the connection works (the model answered).", "")
}

// formatPrice writes a stored price for the route form ("" when unset).
func formatPrice(p *float64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatFloat(*p, 'f', -1, 64)
}
