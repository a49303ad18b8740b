package web

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"harness/internal/auth"
	"harness/internal/routes"
	"harness/internal/service"
	"harness/internal/session"
	"harness/internal/workspace"
	"harness/web/templates"
)

// GET / — the session list: search, archived filter, keyset paging.
func (s *Server) pageSessions(c echo.Context) error {
	return s.renderSessions(c, http.StatusOK, flash(c))
}

// renderSessions shows the session list with a message: a redirect's, or
// why a form posted to it was refused (rendered in place, so a message
// from elsewhere never travels in a URL).
func (s *Server) renderSessions(c echo.Context, status int, msg string) error {
	ctx := c.Request().Context()
	a := ActorFrom(c)
	v := templates.SessionsView{Q: strings.TrimSpace(c.QueryParam("q")), Archived: c.QueryParam("archived") == "1", Flash: msg}
	archived := v.Archived
	list, err := s.svc.ListSessions(ctx, a, service.ListQuery{Q: v.Q, Archived: &archived, Cursor: c.QueryParam("cursor"), Limit: 50})
	if err != nil {
		return s.pageError(c, err)
	}
	for _, r := range list.Sessions {
		label, _, _ := s.routeLabel(r.Provider, r.Model)
		v.Rows = append(v.Rows, templates.SessionRowView{
			ID: r.ID, Title: r.Title, Model: label, Status: string(r.Status), Role: string(r.Role),
			Archived: r.Archived, Updated: r.UpdatedAt,
			CanManage: r.Role.Can(auth.ActionManage),
			Shared:    r.Role != auth.SessionRoleOwner,
		})
	}
	v.Next = list.Next
	prefs := s.userPrefs(ctx, a)
	v.Models = s.modelOptions(s.preferredRoute(prefs))
	v.Mode = string(prefs.Mode)
	v.Workspaces = s.workspaceChoices(c)
	v.Nav = *s.nav(c, "sessions", "")
	return renderComponent(c, status, templates.SessionsPage(v))
}

// maxDirChoices bounds the directories the new-session form offers.
const maxDirChoices = 200

// workspaceChoices are the new-session form's workspace options: the
// directories under the roots the user may use (each root and its
// subdirectories), whether clones work, and why tools are refused if they
// are.
func (s *Server) workspaceChoices(c echo.Context) templates.WorkspaceChoices {
	ctx := c.Request().Context()
	a := ActorFrom(c)
	st := s.svc.SandboxStatus()
	out := templates.WorkspaceChoices{CanClone: st.Active}
	if !st.Active {
		out.Refused = st.Problem
	}
	roots, err := s.svc.WorkspaceRoots(ctx, a)
	if err != nil {
		return out
	}
	for _, r := range roots {
		out.Dirs = append(out.Dirs, templates.DirOption{Path: r.Path, Label: r.Path})
		dirs, err := s.svc.BrowseWorkspace(ctx, a, r.Path)
		if err != nil {
			continue
		}
		for _, d := range dirs {
			if len(out.Dirs) >= maxDirChoices {
				return out
			}
			label := d.Path
			if d.Git {
				label += " (git)"
			}
			out.Dirs = append(out.Dirs, templates.DirOption{Path: d.Path, Label: label})
		}
	}
	return out
}

// preferredRoute is "provider/model" of the user's default, else the
// server's.
func (s *Server) preferredRoute(p routes.Prefs) string {
	prov, model := s.ui.Routes.Preferred(p)
	return prov + "/" + model
}

// POST /sessions {prompt?, route?, mode?, workspace?, path?, source?} —
// creates a session with the user's defaults (or the form's choices) in a
// fresh directory, an existing one or a clone, sends the prompt (once a
// clone is ready), and opens it.
func (s *Server) pageCreateSession(c echo.Context) error {
	ctx := c.Request().Context()
	a := ActorFrom(c)
	prefs := s.userPrefs(ctx, a)
	opts := service.NewSession{Provider: prefs.Provider, Model: prefs.Model, Mode: prefs.Mode, Prompt: c.FormValue("prompt")}
	if r := c.FormValue("route"); r != "" {
		opts.Provider, opts.Model = parseRoute(r)
	}
	if m := c.FormValue("mode"); m != "" {
		opts.Mode = session.PermissionMode(m)
	}
	if _, ok := s.ui.Routes.Lookup(opts.Provider); !ok {
		// A preference for a route that is gone: use the default.
		opts.Provider, opts.Model = "", ""
	}
	switch workspace.Kind(c.FormValue("workspace")) {
	case workspace.KindDir:
		opts.Workspace = service.WorkspaceRequest{Kind: workspace.KindDir, Path: c.FormValue("path")}
	case workspace.KindClone:
		opts.Workspace = service.WorkspaceRequest{Kind: workspace.KindClone, Source: c.FormValue("source")}
	}
	sess, err := s.svc.CreateSession(ctx, a, opts)
	if err != nil {
		if e := service.AsError(err); e.Code == service.CodeBadRequest || e.Code == service.CodeForbidden || e.Code == service.CodeConflict || e.Code == service.CodeUnavailable {
			return s.renderSessions(c, e.Code.HTTPStatus(), e.Message)
		}
		return s.pageError(c, err)
	}
	return redirect(c, "/sessions/"+sess.ID)
}

// POST /sessions/:id/messages {content} — the composer without script.
// Exactly "/compact" compacts the session instead, as the script does.
func (s *Server) pageSendMessage(c echo.Context) error {
	id := c.Param("id")
	content := c.FormValue("content")
	var err error
	if strings.TrimSpace(content) == "/compact" {
		_, err = s.svc.Compact(c.Request().Context(), ActorFrom(c), id)
	} else {
		_, err = s.svc.SendMessage(c.Request().Context(), ActorFrom(c), id, service.Message{Content: content})
	}
	if err != nil {
		return s.pageError(c, err)
	}
	return redirect(c, "/sessions/"+id)
}

// back is where a list action returns: the page it came from when that is
// one of ours, else the list.
func back(c echo.Context, fallback string) string {
	if ref := c.FormValue("back"); ref != "" {
		return safeNext(ref)
	}
	return fallback
}

// POST /sessions/:id/rename {title}
func (s *Server) pageRename(c echo.Context) error {
	id := c.Param("id")
	title := c.FormValue("title")
	if _, err := s.svc.UpdateSession(c.Request().Context(), ActorFrom(c), id, service.Patch{Title: &title}); err != nil {
		return s.pageError(c, err)
	}
	return redirect(c, back(c, "/sessions/"+id))
}

// POST /sessions/:id/archive {archived=1|0}
func (s *Server) pageArchive(c echo.Context) error {
	id := c.Param("id")
	archived := c.FormValue("archived") != "0"
	if _, err := s.svc.UpdateSession(c.Request().Context(), ActorFrom(c), id, service.Patch{Archived: &archived}); err != nil {
		return s.pageError(c, err)
	}
	key := flashSessionArchived
	if !archived {
		key = flashSessionRestored
	}
	return redirect(c, withFlash("/", key))
}

// POST /sessions/:id/fork — a new session from the whole log (refused
// while a turn runs).
func (s *Server) pageFork(c echo.Context) error {
	sess, err := s.svc.Fork(c.Request().Context(), ActorFrom(c), c.Param("id"), nil)
	if err != nil {
		if e := service.AsError(err); e.Code == service.CodeOpenTurn {
			return s.errorPage(c, http.StatusConflict, "Not now", "The agent is working on a turn. Fork the session when the turn has ended.")
		}
		return s.pageError(c, err)
	}
	return redirect(c, "/sessions/"+sess.ID)
}

// GET /sessions/:id/delete — asks first.
func (s *Server) pageDeleteConfirm(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	row, err := s.svc.Row(ctx, ActorFrom(c), id)
	if err == nil && !row.Role.Can(auth.ActionDelete) {
		err = service.NewError(service.CodeForbidden, "not allowed")
	}
	if err != nil {
		return s.pageError(c, err)
	}
	return renderComponent(c, http.StatusOK, templates.ConfirmPage(templates.ConfirmView{
		Nav:     *s.nav(c, "sessions", id),
		Title:   "Delete this session?",
		Message: "“" + titleOrUntitled(row.Title) + "” and its whole log and workspace will be deleted. This cannot be undone.",
		Action:  "/sessions/" + id + "/delete", Button: "Delete for good", Back: "/sessions/" + id,
	}))
}

func titleOrUntitled(t string) string {
	if strings.TrimSpace(t) == "" {
		return "Untitled session"
	}
	return t
}

// POST /sessions/:id/delete
func (s *Server) pageDelete(c echo.Context) error {
	if err := s.svc.DeleteSession(c.Request().Context(), ActorFrom(c), c.Param("id")); err != nil {
		return s.pageError(c, err)
	}
	return redirect(c, withFlash("/", flashSessionDeleted))
}

// GET /sessions/:id/export — the log as JSON lines, as a download.
func (s *Server) pageExport(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	// Headers go out with the first byte, so a refusal (the service's one
	// authorization) is still an error page.
	w := &lazyWriter{c: c, start: func(res *echo.Response) {
		h := res.Header()
		h.Set(echo.HeaderContentType, "application/x-ndjson")
		h.Set(echo.HeaderContentDisposition, `attachment; filename="session-`+safeFileName(id)+`.jsonl"`)
		h.Set("Cache-Control", "no-store")
		res.WriteHeader(http.StatusOK)
	}}
	err := s.svc.Export(ctx, ActorFrom(c), id, w)
	switch {
	case err != nil && !w.started:
		return s.pageError(c, err)
	case err != nil:
		// Headers are out: the download ends short, and the log says why.
		s.log.WarnContext(ctx, "export failed", "session", id, "err", err)
	case !w.started:
		w.start(c.Response())
	}
	return nil
}

// safeFileName keeps [A-Za-z0-9-] for a download name.
func safeFileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return -1
	}, s)
}
