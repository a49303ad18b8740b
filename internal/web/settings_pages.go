package web

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"harness/internal/models"
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
		prov, model := s.ui.Routes.Registry().Default()
		v.DefaultModels = s.modelOptions(prov + "/" + model)
		stored, err := s.ui.Routes.Store().Providers(ctx)
		if err != nil {
			return err
		}
		byName := map[string]int{}
		for _, info := range s.ui.Routes.Registry().List() {
			rv := templates.RouteView{Name: info.Name, Label: info.Label, DefaultModel: info.DefaultModel, Enabled: true, Offline: info.Offline}
			if info.Offline {
				rv.Label = "Offline demo model"
				rv.Kind = "built in"
			} else {
				rv.Kind = "from the environment"
			}
			byName[info.Name] = len(v.Routes)
			v.Routes = append(v.Routes, rv)
		}
		for _, pc := range stored {
			var ids []string
			_ = json.Unmarshal([]byte(pc.Models), &ids) // a bad list shows as empty
			rv := templates.RouteView{
				Name: pc.Name, Label: pc.Name, Kind: pc.Kind, BaseURL: pc.BaseURL, KeySet: pc.APIKey != "",
				DefaultModel: pc.DefaultModel, Models: strings.Join(ids, ", "), Enabled: pc.Enabled, Editable: true,
			}
			if i, ok := byName[pc.Name]; ok {
				if !s.ui.Routes.Managed(pc.Name) {
					continue // shadowed by a built-in route
				}
				rv.Label = v.Routes[i].Label
				v.Routes[i] = rv
				continue
			}
			v.Routes = append(v.Routes, rv)
		}
	}
	return renderComponent(c, status, templates.SettingsPage(v))
}

// POST /settings/prefs {route, mode} — the user's defaults for new
// sessions.
func (s *Server) pageSavePrefs(c echo.Context) error {
	ctx := c.Request().Context()
	p := models.UserPrefs{Mode: session.PermissionMode(c.FormValue("mode"))}
	switch p.Mode {
	case session.ModeAsk, session.ModeAuto, session.ModeReadOnly:
	default:
		return s.renderSettings(c, http.StatusBadRequest, "", "Choose ask, auto or read-only.")
	}
	p.Provider, p.Model = parseRoute(c.FormValue("route"))
	if _, ok := s.ui.Routes.Registry().Get(p.Provider); !ok {
		return s.renderSettings(c, http.StatusBadRequest, "", "That model is not available.")
	}
	if err := s.ui.Routes.Store().SaveUserPrefs(ctx, ActorFrom(c).UserID, p); err != nil {
		return err
	}
	return redirect(c, withFlash("/settings", "Saved. New sessions use these settings."))
}

// POST /settings/default {route} — the server's default route (admins).
func (s *Server) pageSaveDefault(c echo.Context) error {
	prov, model := parseRoute(c.FormValue("route"))
	if err := s.ui.Routes.SetDefault(c.Request().Context(), models.RouteSetting{Provider: prov, Model: model}); err != nil {
		if m := formMessage(err); m != "" {
			return s.renderSettings(c, http.StatusBadRequest, "", m)
		}
		return err
	}
	return redirect(c, withFlash("/settings", "The default model is saved."))
}

// POST /settings/providers — adds or edits a route (admins). The API key
// is write-only: an empty field keeps the stored one.
func (s *Server) pageSaveProvider(c echo.Context) error {
	f := ProviderForm{
		Name: c.FormValue("name"), Kind: c.FormValue("kind"), BaseURL: c.FormValue("base_url"),
		APIKey: c.FormValue("api_key"), ClearKey: c.FormValue("clear_key") == "1",
		DefaultModel: c.FormValue("default_model"), Models: c.FormValue("models"), Enabled: c.FormValue("enabled") == "1",
	}
	if err := s.ui.Routes.Save(c.Request().Context(), f); err != nil {
		if m := formMessage(err); m != "" {
			return s.renderSettings(c, http.StatusBadRequest, "", m)
		}
		return err
	}
	return redirect(c, withFlash("/settings", "The route "+strings.ToLower(strings.TrimSpace(f.Name))+" is saved."))
}

// POST /settings/providers/:name/delete (admins)
func (s *Server) pageDeleteProvider(c echo.Context) error {
	name := c.Param("name")
	if err := s.ui.Routes.Delete(c.Request().Context(), name); err != nil {
		if m := formMessage(err); m != "" {
			return s.renderSettings(c, http.StatusBadRequest, "", m)
		}
		return err
	}
	return redirect(c, withFlash("/settings", "The route "+name+" is deleted."))
}
