package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"harness/internal/auth"
	"harness/internal/render"
	"harness/internal/service"
	"harness/internal/session"
	"harness/web/templates"
)

// historyMessages is how many messages one history page holds.
const historyMessages = 40

// GET /sessions/:id — the chat page.
func (s *Server) pageChat(c echo.Context) error {
	v, err := s.chatView(c, ActorFrom(c), c.Param("id"))
	if _, elsewhere := service.OwnerAddr(err); elsewhere {
		return err // toOwner forwards the page to the session's owner
	}
	if err != nil {
		return s.pageError(c, err)
	}
	v.Nav = s.nav(c, "chat", v.ID)
	v.HistoryURL = "/sessions/" + v.ID + "/history"
	return renderComponent(c, http.StatusOK, templates.ChatPage(v))
}

// GET /s/:token — the read-only live viewer of a share link. Unknown,
// revoked and expired links all answer 404.
func (s *Server) pageShare(c echo.Context) error {
	tok := c.Param("token")
	a, ok, err := s.shareActor(c.Request().Context(), tok)
	if !ok {
		return s.linkGone(c)
	}
	if err != nil {
		return err
	}
	v, err := s.chatView(c, a, a.ShareSessionID)
	if _, elsewhere := service.OwnerAddr(err); elsewhere {
		return err // toOwner forwards the page to the session's owner
	}
	if err != nil {
		if e := service.AsError(err); e.Code == service.CodeNotFound || e.Code == service.CodeUnauthorized {
			return s.linkGone(c)
		}
		return s.pageError(c, err)
	}
	v.ShareToken = tok
	v.HistoryURL = "/s/" + tok + "/history"
	return renderComponent(c, http.StatusOK, templates.ChatPage(v))
}

// shareActor resolves a share token; ok is false for a link that does not
// work (unknown, revoked, expired), which answers "link not valid".
func (s *Server) shareActor(ctx context.Context, tok string) (a *auth.Actor, ok bool, err error) {
	a, err = s.auth.ShareActor(ctx, tok)
	switch {
	case errors.Is(err, auth.ErrNotFound), errors.Is(err, auth.ErrUnauthenticated):
		return nil, false, nil
	case err != nil:
		return nil, true, err
	}
	return a, true, nil
}

func (s *Server) linkGone(c echo.Context) error {
	return s.errorPage(c, http.StatusNotFound, "Link not valid", "This share link does not exist, was revoked or has expired.")
}

// GET /sessions/:id/history?before=SEQ — an older page as a fragment.
func (s *Server) pageHistory(c echo.Context) error {
	return s.history(c, ActorFrom(c), c.Param("id"))
}

// GET /s/:token/history?before=SEQ
func (s *Server) pageShareHistory(c echo.Context) error {
	a, ok, err := s.shareActor(c.Request().Context(), c.Param("token"))
	if !ok {
		return s.linkGone(c)
	}
	if err != nil {
		return err
	}
	return s.history(c, a, a.ShareSessionID)
}

func (s *Server) history(c echo.Context, a *auth.Actor, id string) error {
	ctx := c.Request().Context()
	before, err := strconv.ParseInt(c.QueryParam("before"), 10, 64)
	if err != nil || before < 1 {
		return service.NewError(service.CodeBadRequest, "before must be a seq > 0")
	}
	evs, more, err := s.svc.HistoryPage(ctx, a, id, before, historyMessages)
	if err != nil {
		return s.pageError(c, err)
	}
	tr := s.fold(c, id, evs, a)
	v := templates.HistoryView{Items: tr.Items, HasMore: more, Before: before}
	if len(evs) > 0 {
		v.Before = evs[0].Seq
	}
	return renderFragment(c, templates.HistoryPage(v))
}

// fold folds a page of events for the viewer; events it had to skip (their
// data did not decode) are logged, since the page cannot show them.
func (s *Server) fold(c echo.Context, id string, evs []session.Event, a *auth.Actor) render.Transcript {
	tr := s.ui.Markdown.Fold(evs, render.FoldOptions{ViewerID: viewerID(a), AttachmentBase: attachmentBase(c, id)})
	if tr.Malformed > 0 {
		s.log.Warn("malformed events skipped on a page", "session", id, "count", tr.Malformed, "first", tr.First, "last", tr.Last)
	}
	return tr
}

func viewerID(a *auth.Actor) string {
	if a.IsUser() {
		return a.UserID
	}
	return ""
}

// chatView builds the page from what the service read for a reader (one
// authorization): the newest history page folded, then the session's live
// state (see service.PageSession). What the viewer may do comes from its
// role through auth's one table (SessionRole.Can).
func (s *Server) chatView(c echo.Context, a *auth.Actor, id string) (templates.ChatView, error) {
	ctx := c.Request().Context()
	page, err := s.svc.PageSession(ctx, a, id, historyMessages)
	if err != nil {
		return templates.ChatView{}, err
	}
	sess, evs, more := page.Session, page.Events, page.More
	tr := s.fold(c, id, evs, a)
	label, offline, window := s.routeLabel(sess.Provider, sess.Model)
	if tr.ContextWindow > 0 {
		window = tr.ContextWindow
	}
	v := templates.ChatView{
		ID: sess.ID, Title: sess.Title, ModelLabel: label, Offline: offline,
		Mode: string(sess.Mode), Status: string(sess.Status), Role: string(sess.Role), Archived: sess.Archived,
		CanWrite:      sess.Role.Can(auth.ActionWrite),
		CanManage:     sess.Role.Can(auth.ActionManage),
		AttachmentMax: s.svc.AttachmentMax(),
		Items:         tr.Items, HasMore: more, Head: -1, Before: 0,
		Todos: tr.Todos, Queue: queueView(sess), Interactions: interactionViews(sess),
		ContextWindow: window,
	}
	if len(evs) > 0 {
		v.Before, v.Head = evs[0].Seq, evs[len(evs)-1].Seq
	}
	if tr.Usage != nil {
		v.ContextUsed = tr.Usage.Total()
	}
	v.Figures = s.sessionFigures(ctx, id, v.Head)
	if sess.Context.Window > 0 {
		// The meter's fold of the whole log beats the page's last usage
		// (stale right after a compaction).
		v.ContextUsed, v.ContextWindow = sess.Context.Tokens, sess.Context.Window
	}
	if v.Todos == nil && more {
		v.Todos = s.currentTodos(ctx, a, id)
	}
	if a.IsUser() {
		w := sess.Workspace
		v.Workspace = templates.WorkspaceView{Kind: string(w.Kind), Path: w.Path, Source: w.Source, State: w.State}
	}
	v.Network = sess.Workspace.Network
	// A page served while the start-up probe runs does not wait for it: a
	// refusal shows on the tool calls themselves, and on the next load.
	if st, ok := s.svc.SandboxKnown(); ok && !st.Active {
		v.ToolsRefused = st.Problem
	}
	v.Effort = s.effortView(sess.Provider, sess.Model, sess.Effort, v.CanWrite)
	if v.CanWrite {
		v.Models = s.modelOptions(sess.Provider + "/" + sess.Model)
	}
	return v, nil
}

// sessionFigures are the footer's figures as of head, the page's last
// (stored) event: the book folds the stored events it has not seen yet.
// A failed read logs and shows what was folded.
func (s *Server) sessionFigures(ctx context.Context, id string, head int64) render.SessionFigures {
	if head < 0 {
		return render.SessionFigures{}
	}
	book := s.ui.Figures
	if book == nil {
		book = render.NewFigureBook(1)
	}
	f, err := book.At(ctx, id, head, func(ctx context.Context, from, to int64) ([]session.Event, error) {
		return s.ui.Store.EventsSince(ctx, id, from-1, int(to-from))
	})
	if err != nil {
		s.log.WarnContext(ctx, "chat page: session figures", "session", id, "err", err)
	}
	return f
}

// currentTodos reads the todo list when the newest page did not include the
// last todo/write: the live log's, else the stored one's.
func (s *Server) currentTodos(ctx context.Context, a *auth.Actor, id string) []session.Todo {
	todos, err := s.svc.CurrentTodos(ctx, a, id)
	if err != nil {
		s.log.WarnContext(ctx, "chat page: todo list", "session", id, "err", err)
		return nil
	}
	return todos
}
