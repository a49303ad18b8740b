package web

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"harness/internal/mcp"
	"harness/web/templates"
)

// mcpViews is the MCP part of Settings (admins): every configured server
// with its connections and tools, and the edit forms of those added in
// Settings (a stored server left out shows why).
func (s *Server) mcpViews(ctx context.Context) (templates.MCPView, error) {
	var v templates.MCPView
	if s.ui.MCP == nil {
		return v, nil
	}
	v.Editable = true
	stored, err := s.ui.MCP.Stored(ctx)
	if err != nil {
		return v, err
	}
	forms := make(map[string]templates.MCPFormView, len(stored))
	for _, st := range stored {
		forms[st.Name] = mcpFormView(st)
	}
	for _, st := range s.ui.MCP.Status() {
		sv := templates.MCPServerView{Name: st.Name, Transport: st.Transport, Target: st.Target, ReadOnly: st.ReadOnly,
			Timeout: st.Timeout.String(), Skipped: st.Skipped, FromFile: st.Origin == mcp.OriginFile}
		for _, c := range st.Sessions {
			sv.Sessions = append(sv.Sessions, templates.MCPSessionView{Session: c.Session, State: string(c.State), Error: c.Error})
		}
		for _, t := range st.Tools {
			sv.Tools = append(sv.Tools, templates.MCPToolView{Name: t.Name, Description: t.Description})
		}
		if f, ok := forms[st.Name]; ok && !sv.FromFile {
			sv.Form = &f
			delete(forms, st.Name)
		}
		v.Servers = append(v.Servers, sv)
	}
	// Stored servers that are not in use: their form and the reason.
	for _, st := range stored {
		if f, ok := forms[st.Name]; ok {
			v.Servers = append(v.Servers, templates.MCPServerView{Name: st.Name, Transport: st.Transport, Form: &f, Error: st.Error})
		}
	}
	return v, nil
}

// mcpFormView fills a stored server's edit form: names of env variables
// and headers with empty values (write-only: an empty value keeps the
// stored one).
func mcpFormView(st mcp.StoredView) templates.MCPFormView {
	f := templates.MCPFormView{Name: st.Name, Transport: st.Transport, Command: st.Command, StoredURL: st.URL,
		Args: strings.Join(st.Args, "\n"), EnvAllow: strings.Join(st.EnvAllow, ", "), ReadOnlyPaths: strings.Join(st.ReadOnlyPaths, "\n"),
		ReadOnly: st.ReadOnly, Timeout: st.Timeout, StartTimeout: st.StartTimeout}
	var env, headers []string
	for _, n := range st.EnvNames {
		env = append(env, n+"=")
	}
	for _, n := range st.HeaderNames {
		headers = append(headers, n+":")
	}
	f.Env, f.Headers = strings.Join(env, "\n"), strings.Join(headers, "\n")
	return f
}

// POST /settings/mcp — adds or edits an MCP server (admins). Env and
// header values are write-only: a name with an empty value keeps the
// stored value.
func (s *Server) pageSaveMCP(c echo.Context) error {
	if s.ui.MCP == nil {
		return echo.ErrNotFound
	}
	f := mcp.Form{
		Name: c.FormValue("name"), Transport: c.FormValue("transport"), Command: c.FormValue("command"),
		Args: c.FormValue("args"), Env: c.FormValue("env"), EnvAllow: c.FormValue("env_allow"),
		ReadOnlyPaths: c.FormValue("read_only_paths"), URL: c.FormValue("url"), Headers: c.FormValue("headers"),
		ReadOnly: c.FormValue("read_only") == "1", Timeout: c.FormValue("timeout"), StartTimeout: c.FormValue("start_timeout"),
	}
	return s.mcpResult(c, s.ui.MCP.Save(c.Request().Context(), f), flashMCPSaved)
}

// POST /settings/mcp/:name/delete (admins)
func (s *Server) pageDeleteMCP(c echo.Context) error {
	if s.ui.MCP == nil {
		return echo.ErrNotFound
	}
	return s.mcpResult(c, s.ui.MCP.Delete(c.Request().Context(), c.Param("name")), flashMCPDeleted)
}

// mcpResult answers an MCP form: a refusal re-renders the page with its
// message (400), any other error is the server's.
func (s *Server) mcpResult(c echo.Context, err error, ok flashKey) error {
	if err != nil {
		if m := mcp.InputMessage(err); m != "" {
			return s.renderSettings(c, http.StatusBadRequest, "", m)
		}
		return err
	}
	return redirect(c, withFlash("/settings#mcp", ok))
}
