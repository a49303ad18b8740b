package service

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"harness/internal/auth"
	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/models"
	"harness/internal/session"
)

// CreateSession starts a new session owned by a. Its workspace is a fresh
// directory (the default), an existing directory under a workspace root a
// may use, or a git clone into a fresh directory (prepared in the
// background; opts.Prompt is sent once it is ready). The route defaults to
// the registry's default; the mode to ask.
func (s *Service) CreateSession(ctx context.Context, a *auth.Actor, opts NewSession) (Session, error) {
	if err := s.requireUser(a); err != nil {
		return Session{}, err
	}
	title, err := checkTitle(opts.Title, true)
	if err != nil {
		return Session{}, err
	}
	route, err := s.pickRoute(opts.Provider, opts.Model)
	if err != nil {
		return Session{}, err
	}
	if opts.Mode != "" && !validMode(opts.Mode) {
		return Session{}, Errorf(CodeBadRequest, "mode must be read-only, ask or auto")
	}
	if len(opts.Prompt) > MaxMessageBytes {
		return Session{}, Errorf(CodeTooLarge, "message is larger than %d KiB", MaxMessageBytes>>10)
	}
	id := uuid.NewString()
	row := &models.Session{
		ID: id, OwnerID: a.UserID, Title: title,
		Provider: route.Provider, Model: route.Model, Mode: string(orAsk(opts.Mode)),
	}
	clone, err := s.planWorkspace(ctx, a, row, opts.Workspace)
	if err != nil {
		return Session{}, err
	}
	if clone != nil {
		row.PendingPrompt = opts.Prompt
	}
	if err := s.newSession(ctx, row, nil); err != nil {
		return Session{}, err
	}
	ag, ok := s.mgr.Lookup(id)
	if !ok {
		return Session{}, s.fail(ctx, "create session", fmt.Errorf("session %s vanished after create", id))
	}
	if opts.Mode != "" && opts.Mode != session.ModeAsk {
		if err := ag.SetMode(ctx, opts.Mode, by(a)); err != nil {
			return Session{}, s.fail(ctx, "create session: mode", err)
		}
	}
	if title != "" {
		if err := ag.SetTitle(ctx, title, by(a)); err != nil {
			return Session{}, s.fail(ctx, "create session: title", err)
		}
	}
	s.log.InfoContext(ctx, "session created", "session", id, "owner", a.UserID, "workspace", row.WorkspaceKind)
	s.emit(Change{Kind: ChangeUpdated, Session: id})
	if clone != nil {
		s.startClone(id, row.Workspace, *clone)
	} else if strings.TrimSpace(opts.Prompt) != "" {
		if _, err := s.SendMessage(ctx, a, id, Message{Content: opts.Prompt}); err != nil {
			return Session{}, err
		}
	}
	return s.get(ctx, id, auth.SessionRoleOwner)
}

// newSession creates the row and the agent (seeded for forks) for a
// workspace planWorkspace prepared; on failure it undoes what it did.
func (s *Service) newSession(ctx context.Context, row *models.Session, seed []session.Event) error {
	undoWorkspace := func() {
		if err := s.ws.Remove(row.ID, managedDir(row)); err != nil {
			s.log.WarnContext(ctx, "remove workspace", "session", row.ID, "err", err)
		}
	}
	if err := s.store.CreateSession(ctx, row); err != nil {
		undoWorkspace()
		return s.fail(ctx, "create session row", err)
	}
	var err error
	if seed != nil {
		_, err = s.mgr.CreateSeeded(ctx, s.meta.MetaOf(row), seed)
	} else {
		_, err = s.mgr.Create(ctx, s.meta.MetaOf(row))
	}
	if err != nil {
		_ = s.mgr.Remove(context.WithoutCancel(ctx), row.ID)
		_ = s.store.DeleteSession(context.WithoutCancel(ctx), row.ID)
		undoWorkspace()
		return s.fail(ctx, "start session", err)
	}
	return nil
}

// ListSessions lists the sessions a may see: its own, those shared with it
// and, for an admin, every session; newest activity first.
func (s *Service) ListSessions(ctx context.Context, a *auth.Actor, q ListQuery) (SessionList, error) {
	if err := s.requireUser(a); err != nil {
		return SessionList{}, err
	}
	if q.Limit < 0 || q.Limit > 500 {
		return SessionList{}, Errorf(CodeBadRequest, "limit must be between 1 and 500")
	}
	mq := models.ListQuery{
		OwnerID: a.UserID, IncludeShared: true, All: a.IsAdmin(),
		Query: q.Q, Archived: q.Archived, Limit: q.Limit,
	}
	if q.Cursor != "" {
		c, err := decodeCursor(q.Cursor)
		if err != nil {
			return SessionList{}, err
		}
		mq.Before = c
	}
	rows, next, err := s.store.ListSessions(ctx, mq)
	if err != nil {
		return SessionList{}, s.fail(ctx, "list sessions", err)
	}
	roles, err := s.memberRoles(ctx, a.UserID, rows)
	if err != nil {
		return SessionList{}, s.fail(ctx, "list sessions", err)
	}
	out := SessionList{Sessions: make([]SessionRow, 0, len(rows))}
	for i := range rows {
		out.Sessions = append(out.Sessions, s.rowOf(&rows[i], roleIn(a, &rows[i], roles)))
	}
	s.remoteStatuses(ctx, out.Sessions)
	if next != nil {
		out.Next = encodeCursor(next)
	}
	return out, nil
}

// memberRoles reads a's memberships among rows in one query.
func (s *Service) memberRoles(ctx context.Context, userID string, rows []models.Session) (map[string]auth.SessionRole, error) {
	ids := make([]string, 0, len(rows))
	for _, r := range rows {
		if r.OwnerID != userID {
			ids = append(ids, r.ID)
		}
	}
	roles := map[string]auth.SessionRole{}
	if len(ids) == 0 {
		return roles, nil
	}
	var ms []models.Member
	err := s.store.DB.R.WithContext(ctx).Where("user_id = ? AND session_id IN ?", userID, ids).Find(&ms).Error
	if err != nil {
		return nil, fmt.Errorf("member roles: %w", err)
	}
	for _, m := range ms {
		roles[m.SessionID] = auth.SessionRole(m.Role)
	}
	return roles, nil
}

// roleIn is a's role on a listed row, by auth's precedence (the list
// holds only rows a may read).
func roleIn(a *auth.Actor, row *models.Session, members map[string]auth.SessionRole) auth.SessionRole {
	acc := auth.Access{OwnerID: row.OwnerID, MemberRole: members[row.ID], UserFound: true}
	if a.IsAdmin() {
		acc.UserRole = auth.RoleAdmin
	}
	return auth.RoleOf(acc, a.UserID)
}

func encodeCursor(c *models.Cursor) string {
	b, _ := json.Marshal(c) // a struct of a time and a string always encodes
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (*models.Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	var c models.Cursor
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.ID == "" {
		return nil, Errorf(CodeBadRequest, "invalid cursor")
	}
	return &c, nil
}

// GetSession returns a session with its status, route, mode, head, queue,
// pending interactions and a's role.
func (s *Service) GetSession(ctx context.Context, a *auth.Actor, id string) (Session, error) {
	role, err := s.Authorize(ctx, a, id, auth.ActionRead)
	if err != nil {
		return Session{}, err
	}
	if err := s.elsewhere(ctx, id); err != nil {
		return Session{}, err
	}
	return s.get(ctx, id, role)
}

// SessionPage is what a chat page shows before its socket opens: the
// newest page of the log and the session.
type SessionPage struct {
	Session
	// Events are the newest page, cut on message boundaries; More says
	// whether older events remain.
	Events []session.Event
	More   bool
}

// PageSession is GetSession for a page about to open the session's socket,
// whose subscription brings the live state (status, queue, interactions,
// allowed tools, the context meter): a session that is not loaded is not
// loaded for it, unless it has queued messages to show. Its Queue,
// Interactions and AllowedTools are then empty and Context holds only the
// window.
//
// It authorizes once, then reads the newest page of at most messages
// messages (see models.Store.TailPage), then the live state: whatever the
// page does not show (newer events, answered prompts) arrives over the
// socket, which resumes after the page's last seq.
func (s *Service) PageSession(ctx context.Context, a *auth.Actor, id string, messages int) (SessionPage, error) {
	role, err := s.Authorize(ctx, a, id, auth.ActionRead)
	if err != nil {
		return SessionPage{}, err
	}
	if err := s.elsewhere(ctx, id); err != nil {
		return SessionPage{}, err
	}
	evs, more, err := s.store.TailPage(ctx, id, -1, messages)
	if err != nil {
		return SessionPage{}, s.fail(ctx, "page", err)
	}
	sess, err := s.read(ctx, id, role, false)
	if err != nil {
		return SessionPage{}, err
	}
	return SessionPage{Session: sess, Events: evs, More: more}, nil
}

// HistoryPage returns the page of at most messages messages before seq
// before (see models.Store.TailPage) and whether older events remain.
func (s *Service) HistoryPage(ctx context.Context, a *auth.Actor, id string, before int64, messages int) ([]session.Event, bool, error) {
	if before < 1 {
		return nil, false, Errorf(CodeBadRequest, "before must be a seq > 0")
	}
	if _, err := s.Authorize(ctx, a, id, auth.ActionRead); err != nil {
		return nil, false, err
	}
	evs, more, err := s.store.TailPage(ctx, id, before, messages)
	if err != nil {
		return nil, false, s.fail(ctx, "history", err)
	}
	return evs, more, nil
}

// Audience lists the user ids that may see the session besides admins: its
// owner and members. It is for choosing whom to notify, not an access
// check: callers still Authorize each of them (Row does).
func (s *Service) Audience(ctx context.Context, id string) ([]string, error) {
	row, err := s.store.GetSession(ctx, id)
	if err != nil {
		return nil, s.fail(ctx, "audience", err)
	}
	ms, err := s.auth.ListMembers(ctx, id)
	if err != nil {
		return nil, s.fail(ctx, "audience", err)
	}
	out := make([]string, 0, len(ms)+1)
	out = append(out, row.OwnerID)
	for _, m := range ms {
		out = append(out, m.UserID)
	}
	return out, nil
}

// Row returns a session's list row for a (the sidebar's view).
func (s *Service) Row(ctx context.Context, a *auth.Actor, id string) (SessionRow, error) {
	role, err := s.Authorize(ctx, a, id, auth.ActionRead)
	if err != nil {
		return SessionRow{}, err
	}
	row, err := s.store.GetSession(ctx, id)
	if err != nil {
		return SessionRow{}, s.fail(ctx, "get session", err)
	}
	out := []SessionRow{s.rowOf(row, role)}
	s.remoteStatuses(ctx, out)
	return out[0], nil
}

func (s *Service) get(ctx context.Context, id string, role auth.SessionRole) (Session, error) {
	return s.read(ctx, id, role, true)
}

// read builds a Session; load says whether to load an agent that is not
// loaded (see PageSession). With replicas nothing is loaded (a load would
// take the lease): the stored log says what a load would, and the
// status is the one the owner notified, if any replica runs the session.
func (s *Service) read(ctx context.Context, id string, role auth.SessionRole, load bool) (Session, error) {
	row, err := s.store.GetSession(ctx, id)
	if err != nil {
		return Session{}, s.fail(ctx, "get session", err)
	}
	// The queue, pending prompts and the context meter live in the agent.
	ag, loaded := s.mgr.Lookup(id)
	if !loaded && s.replicas != nil {
		return s.readStored(ctx, row, role, load || row.PendingInbox > 0)
	}
	if !loaded && (load || row.PendingInbox > 0) {
		if ag, err = s.mgr.Get(ctx, id); err != nil {
			if row.PendingInbox > 0 {
				return Session{}, s.fail(ctx, "load session", err)
			}
			s.log.WarnContext(ctx, "get session: load agent", "session", id, "err", err)
			ag = nil
		}
	}
	out := s.emptySession(row, role)
	if ag != nil {
		out.Queue = ag.Queue()
		out.Interactions = ag.PendingInteractions()
		if t := ag.AllowedTools(); t != nil {
			out.AllowedTools = t
		}
		out.Context = s.measure(id, ag.Log(), out.Provider, out.Model)
	}
	return out, nil
}

// emptySession is a session without its live parts: nothing queued or
// pending, only the window of the context meter.
func (s *Service) emptySession(row *models.Session, role auth.SessionRole) Session {
	out := Session{SessionRow: s.rowOf(row, role), Queue: driver.Queue{Queued: []llm.Message{}, Steering: []llm.Message{}}, Interactions: []driver.Interaction{}, AllowedTools: []string{}}
	if row.ParentID != "" && row.Kind != models.KindSubagent {
		fs := row.ForkSeq
		out.ForkSeq = &fs
	}
	out.Context.Window = s.compact.Window(s.providers, out.Provider, out.Model)
	return out
}

// readStored builds a Session of a replica that does not run it from the
// stored log, when withLog, else from the row alone. Nothing is pending:
// prompts live in the owner's agent, and a dead owner's are gone (the
// next load closes its turn).
func (s *Service) readStored(ctx context.Context, row *models.Session, role auth.SessionRole, withLog bool) (Session, error) {
	out := s.emptySession(row, role)
	rows := []SessionRow{out.SessionRow}
	s.remoteStatuses(ctx, rows)
	out.SessionRow = rows[0]
	if !withLog {
		return out, nil
	}
	l, err := s.store.ReadLog(ctx, row.ID)
	if err != nil {
		return Session{}, s.fail(ctx, "read session", err)
	}
	if out.Queue, err = storedQueue(l); err != nil {
		return Session{}, s.fail(ctx, "read session: queue", err)
	}
	if t := l.State().AllowedTools; t != nil {
		out.AllowedTools = t
	}
	out.Head = l.Len() - 1
	out.Context = s.measure(row.ID, l, out.Provider, out.Model)
	return out, nil
}

// rowOf builds a row; a live agent's log is fresher than the stored row.
func (s *Service) rowOf(row *models.Session, role auth.SessionRole) SessionRow {
	r := SessionRow{
		ID: row.ID, Title: row.Title, OwnerID: row.OwnerID, ParentID: row.ParentID, Kind: row.Kind,
		Mode: orAsk(session.PermissionMode(row.Mode)), Effort: llm.Effort(row.Effort), Archived: row.Archived,
		Status: driver.StatusIdle, Head: row.Head, Role: role,
		CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt,
		Workspace: workspaceInfo(row),
	}
	rt := s.routeOf(row.Provider, row.Model)
	if ag, ok := s.mgr.Lookup(row.ID); ok {
		r.Status = ag.Status()
		r.Head = ag.Log().Len() - 1
		st := ag.Log().State()
		r.Mode = st.Mode
		if st.Effort != nil {
			r.Effort = st.Effort.Effort
		}
		if st.Title != "" {
			r.Title = st.Title
		}
		if st.Model != nil {
			rt = s.routeOf(st.Model.Provider, st.Model.Model)
		}
	}
	r.Provider, r.Model = rt.Provider, rt.Model
	return r
}

// UpdateSession applies a patch: title and archived need manage rights,
// mode, route and effort write rights.
func (s *Service) UpdateSession(ctx context.Context, a *auth.Actor, id string, p Patch) (Session, error) {
	if p.Title == nil && p.Archived == nil && p.Mode == nil && p.Provider == nil && p.Model == nil && p.Effort == nil && p.Network == nil {
		return Session{}, Errorf(CodeBadRequest, "nothing to change")
	}
	if p.Network != nil {
		if err := s.SetNetwork(ctx, a, id, *p.Network); err != nil {
			return Session{}, err
		}
		if p.Title == nil && p.Archived == nil && p.Mode == nil && p.Provider == nil && p.Model == nil && p.Effort == nil {
			role, err := s.Authorize(ctx, a, id, auth.ActionRead)
			if err != nil {
				return Session{}, err
			}
			return s.get(ctx, id, role)
		}
	}
	act := auth.ActionWrite
	if p.Title != nil || p.Archived != nil {
		act = auth.ActionManage
	}
	role, err := s.Authorize(ctx, a, id, act)
	if err != nil {
		return Session{}, err
	}
	var title string
	if p.Title != nil {
		if title, err = checkTitle(*p.Title, false); err != nil {
			return Session{}, err
		}
	}
	if p.Mode != nil && !validMode(*p.Mode) {
		return Session{}, Errorf(CodeBadRequest, "mode must be read-only, ask or auto")
	}
	if p.Provider != nil || p.Model != nil {
		if _, err := s.pickRoute(deref(p.Provider), deref(p.Model)); err != nil {
			return Session{}, err
		}
	}
	if p.Effort != nil {
		// Checked against the model the patch ends on, before anything
		// changes: a refused effort leaves the route as it was.
		if err := s.checkPatchEffort(ctx, id, role, p); err != nil {
			return Session{}, err
		}
	}
	if p.Mode != nil {
		if err := s.setMode(ctx, a, id, *p.Mode); err != nil {
			return Session{}, err
		}
	}
	if p.Provider != nil || p.Model != nil {
		if err := s.setModel(ctx, a, id, deref(p.Provider), deref(p.Model)); err != nil {
			return Session{}, err
		}
	}
	// After the route: the effort is checked against the new model.
	if p.Effort != nil {
		if err := s.setEffort(ctx, a, id, *p.Effort); err != nil {
			return Session{}, err
		}
	}
	if p.Title != nil {
		ag, release, err := s.agent(ctx, id)
		if err != nil {
			return Session{}, err
		}
		defer release()
		if err := ag.SetTitle(ctx, title, by(a)); err != nil {
			return Session{}, s.fail(ctx, "rename", err)
		}
		if err := s.store.UpdateSession(ctx, id, models.SessionUpdate{Title: &title}); err != nil {
			return Session{}, s.fail(ctx, "rename", err)
		}
	}
	if p.Archived != nil {
		if err := s.store.UpdateSession(ctx, id, models.SessionUpdate{Archived: p.Archived}); err != nil {
			return Session{}, s.fail(ctx, "archive", err)
		}
	}
	s.emit(Change{Kind: ChangeUpdated, Session: id})
	return s.get(ctx, id, role)
}

// DeleteSession stops the session's agent for good and deletes its row,
// log, members, share links and workspace directory.
func (s *Service) DeleteSession(ctx context.Context, a *auth.Actor, id string) error {
	if _, err := s.Authorize(ctx, a, id, auth.ActionDelete); err != nil {
		return err
	}
	row, err := s.store.GetSession(ctx, id)
	if err != nil {
		return s.fail(ctx, "delete session", err)
	}
	audience := []string{row.OwnerID}
	if ms, err := s.auth.ListMembers(ctx, id); err == nil {
		for _, m := range ms {
			audience = append(audience, m.UserID)
		}
	}
	if err := s.mgr.Remove(ctx, id); err != nil {
		return s.fail(ctx, "delete session: stop agent", err)
	}
	// The parent's task calls were cancelled with it: its subagents'
	// sessions go too (their workspace is the parent's, removed below).
	if err := s.deleteChildren(ctx, id); err != nil {
		return s.fail(ctx, "delete session: subagents", err)
	}
	if err := s.store.Flush(ctx, id); err != nil {
		// The rows are deleted below either way; a failed flush only
		// means queued events are dropped with them.
		s.log.WarnContext(ctx, "flush before delete", "session", id, "err", err)
	}
	if err := s.store.DeleteSession(ctx, id); err != nil && !isNotFound(err) {
		return s.fail(ctx, "delete session", err)
	}
	s.store.Forget(id)
	// A subscriber may have loaded the agent again between Remove and the
	// delete; the row is gone now, so this removal is final.
	if err := s.mgr.Remove(context.WithoutCancel(ctx), id); err != nil {
		s.log.WarnContext(ctx, "remove reloaded agent", "session", id, "err", err)
	}
	s.jobs.cancel(id)
	if err := s.ws.Remove(id, managedDir(row)); err != nil {
		s.log.WarnContext(ctx, "remove workspace", "session", id, "err", err)
	}
	s.log.InfoContext(ctx, "session deleted", "session", id, "by", a.UserID)
	s.emit(Change{Kind: ChangeDeleted, Session: id, Users: audience})
	return nil
}

// checkTitle trims a title; empty is allowed only when optional.
func checkTitle(t string, optional bool) (string, error) {
	t = strings.TrimSpace(t)
	switch {
	case t == "" && !optional:
		return "", Errorf(CodeBadRequest, "title must not be empty")
	case len(t) > MaxTitleBytes:
		return "", Errorf(CodeBadRequest, "title is longer than %d bytes", MaxTitleBytes)
	case strings.ContainsAny(t, "\n\r"):
		return "", Errorf(CodeBadRequest, "title must be one line")
	}
	return t, nil
}

func validMode(m session.PermissionMode) bool {
	return m == session.ModeReadOnly || m == session.ModeAsk || m == session.ModeAuto
}

func orAsk(m session.PermissionMode) session.PermissionMode {
	if m == "" {
		return session.ModeAsk
	}
	return m
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
