package web

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"harness/internal/service"
	"harness/internal/workspace"
	"harness/web/templates"
)

// sandboxView fills the Sandbox part of Settings.
func (s *Server) sandboxView(c echo.Context) (templates.SandboxView, error) {
	a := ActorFrom(c)
	st, err := s.svc.SandboxSettings(c.Request().Context(), a)
	if err != nil {
		return templates.SandboxView{}, err
	}
	sb := st.Sandbox
	v := templates.SandboxView{
		Summary: sb.Summary(), Active: sb.Active, Confined: sb.Confined, Landlock: sb.Landlock,
		Bwrap: sb.Bwrap, BwrapVersion: sb.BwrapVersion, BwrapProblem: sb.BwrapProblem, Problem: sb.Problem,
		Identity: fmt.Sprintf("%d:%d", sb.UID, sb.GID),
		Limits: fmt.Sprintf("per process: %d s CPU, %s per file, %d open files",
			sb.Limits.CPUSeconds, size(int64(sb.Limits.FileSizeBytes)), sb.Limits.OpenFiles),
		Caps: fmt.Sprintf("cgroups %s — in force: %s memory, %d tasks per session, an equal CPU weight",
			sb.Cgroups, size(int64(sb.Limits.MemoryBytes)), sb.Limits.Processes),
		Disk:             fmt.Sprintf("%s per workspace, %s: %s", size(st.Disk.QuotaBytes), st.Disk.Mechanism, st.Disk.Why),
		ReadOnly:         strings.Join(sb.ReadOnly, " "),
		GitHosts:         strings.Join(st.GitHosts, "\n"),
		ConfigGitHosts:   st.ConfigGitHosts,
		FetchHosts:       strings.Join(st.FetchHosts, "\n"),
		ConfigFetchHosts: st.ConfigFetchHosts,
		ForkCopyMax:      "up to " + size(st.ForkCopyMax),
	}
	if sb.Cgroups == "" {
		v.Caps = fmt.Sprintf("not used: %s — %s data per process, %d processes per command instead",
			sb.CgroupProblem, size(int64(sb.Limits.MemoryBytes)), sb.Limits.Processes)
	}
	if st.ForkCopyMax <= 0 {
		v.ForkCopyMax = "never (HARNESS_FORK_COPY_MAX=0)"
	}
	for _, r := range st.Roots {
		v.Roots = append(v.Roots, templates.RootView{Path: r.Path, Users: strings.Join(r.Users, ", "), Shared: r.Shared, Editable: r.Source == "settings"})
	}
	if a.IsAdmin() {
		for _, info := range s.ui.Routes.Available() {
			label := info.Label
			if info.Offline {
				label = "Offline demo model"
			}
			v.RouteNetwork = append(v.RouteNetwork, templates.RouteNetworkView{Name: info.Name, Label: label, On: st.RouteNetwork[info.Name]})
		}
	}
	return v, nil
}

// size formats a byte count.
func size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// settingsResult answers a Sandbox form: a coded refusal re-renders the page
// with the message; success returns to the section.
func (s *Server) settingsResult(c echo.Context, err error, ok flashKey) error {
	if err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal {
			return err
		}
		return s.renderSettings(c, e.Code.HTTPStatus(), "", e.Message)
	}
	return redirect(c, withFlash("/settings", ok)+"#sandbox")
}

// POST /settings/roots {path, users, shared} (admins)
func (s *Server) pageAddRoot(c echo.Context) error {
	r := workspace.Root{Path: c.FormValue("path"), Shared: c.FormValue("shared") == "1"}
	for _, u := range strings.Split(c.FormValue("users"), ",") {
		if u = strings.TrimSpace(u); u != "" {
			r.Users = append(r.Users, u)
		}
	}
	err := s.svc.AddWorkspaceRoot(c.Request().Context(), ActorFrom(c), r)
	return s.settingsResult(c, err, flashRootSaved)
}

// POST /settings/roots/delete {path} (admins)
func (s *Server) pageRemoveRoot(c echo.Context) error {
	err := s.svc.RemoveWorkspaceRoot(c.Request().Context(), ActorFrom(c), c.FormValue("path"))
	return s.settingsResult(c, err, flashRootRemoved)
}

// POST /settings/git-hosts {hosts: one per line} (admins)
func (s *Server) pageSaveGitHosts(c echo.Context) error {
	hosts := strings.FieldsFunc(c.FormValue("hosts"), func(r rune) bool { return r == '\n' || r == '\r' || r == ',' || r == ' ' })
	err := s.svc.SetGitHosts(c.Request().Context(), ActorFrom(c), hosts)
	return s.settingsResult(c, err, flashHostsSaved)
}

// POST /settings/fetch-hosts {hosts: one per line} (admins)
func (s *Server) pageSaveFetchHosts(c echo.Context) error {
	hosts := strings.FieldsFunc(c.FormValue("hosts"), func(r rune) bool { return r == '\n' || r == '\r' || r == ',' || r == ' ' })
	err := s.svc.SetFetchHosts(c.Request().Context(), ActorFrom(c), hosts)
	return s.settingsResult(c, err, flashFetchHostsSaved)
}

// POST /settings/network {route: checked routes} (admins)
func (s *Server) pageSaveRouteNetwork(c echo.Context) error {
	ctx := c.Request().Context()
	form, err := c.FormParams()
	if err != nil {
		return s.renderSettings(c, http.StatusBadRequest, "", "The form could not be read.")
	}
	on := map[string]bool{}
	for _, r := range form["route"] {
		on[r] = true
	}
	for _, info := range s.ui.Routes.Available() {
		if err := s.svc.SetRouteNetwork(ctx, ActorFrom(c), info.Name, on[info.Name]); err != nil {
			return s.settingsResult(c, err, flashNone)
		}
	}
	return s.settingsResult(c, nil, flashNetworkSaved)
}

// POST /sessions/:id/network {network: 1|0} (admins) — the session's tools
// may use the network.
func (s *Server) pageSetNetwork(c echo.Context) error {
	id := c.Param("id")
	if err := s.svc.SetNetwork(c.Request().Context(), ActorFrom(c), id, c.FormValue("network") == "1"); err != nil {
		return s.pageError(c, err)
	}
	return redirect(c, "/sessions/"+id)
}
