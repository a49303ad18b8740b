package auth

import (
	"context"
	"fmt"
	"time"
)

// Action is what an actor wants to do with a session.
type Action string

// Actions. Every check of what a session role may do names one of these
// and goes through SessionRole.Can; no other package lists roles.
const (
	// ActionRead: transcript, events, subscribe, files, history pages.
	ActionRead Action = "read"
	// ActionExport: download the whole log (JSON lines).
	ActionExport Action = "export"
	// ActionFork: a new session from this one's log; the fork belongs to
	// the forker, so it needs an account, not a share link.
	ActionFork Action = "fork"
	// ActionWrite: send, steer, cancel, queue edit/remove/run/clear,
	// set_mode, set_model, compact, revoke an allowed tool.
	ActionWrite Action = "write"
	// ActionAnswer: decide tool approvals and answer the agent's questions.
	ActionAnswer Action = "answer"
	// ActionManage: rename and archive.
	ActionManage Action = "manage"
	// ActionShare: list, add and remove members; create, list and revoke
	// share links.
	ActionShare Action = "share"
	// ActionDelete: delete the session, its log and its workspace.
	ActionDelete Action = "delete"
)

// Actions lists every action, for tables and tests.
var Actions = []Action{ActionRead, ActionExport, ActionFork, ActionWrite, ActionAnswer, ActionManage, ActionShare, ActionDelete}

// allowed is the role × action table, the one place that says what a
// session role may do. A role missing here (SessionRoleNone) may do
// nothing.
var allowed = map[SessionRole]map[Action]bool{
	SessionRoleOwner:        set(Actions...),
	SessionRoleAdmin:        set(Actions...),
	SessionRoleCollaborator: set(ActionRead, ActionExport, ActionFork, ActionWrite, ActionAnswer),
	SessionRoleViewer:       set(ActionRead, ActionExport, ActionFork),
}

// shareActions are what a share link may do, within its viewer role: read
// without an account. Forking makes a session someone must own.
var shareActions = set(ActionRead, ActionExport)

func set(acts ...Action) map[Action]bool {
	m := make(map[Action]bool, len(acts))
	for _, a := range acts {
		m[a] = true
	}
	return m
}

// Can reports whether role r allows act. It is what pages, templates (as
// booleans), the renderer (through the socket) and Authorize consult; the
// role itself comes from Authorize, fresh from the store.
func (r SessionRole) Can(act Action) bool { return allowed[r][act] }

// Known reports whether act is an action of this package.
func (act Action) Known() bool { return allowed[SessionRoleOwner][act] }

// Authorize is THE authorization function: every page, REST route and
// WebSocket command calls it before touching a session. It returns the
// actor's role on the session, or an error wrapping:
//
//   - ErrUnauthenticated: anonymous, a disabled or deleted account, or a
//     share link asked for anything but reading its own session (or
//     revoked/expired since it was resolved);
//   - ErrNotFound: no such session, or the user has no role on it at all —
//     the same answer, so a session's existence never leaks (HTTP 404);
//   - ErrForbidden: the user may read the session but the role does not
//     allow act (HTTP 403).
//
// Roles come fresh from the store on every call, so a removed member or a
// demoted admin loses access on the next command, also on a long-lived
// WebSocket.
func (s *Service) Authorize(ctx context.Context, a *Actor, sessionID string, act Action) (SessionRole, error) {
	if !act.Known() {
		return SessionRoleNone, fmt.Errorf("authorize: unknown action %q: %w", act, ErrForbidden)
	}
	if a == nil {
		return SessionRoleNone, ErrUnauthenticated
	}
	if a.Via == ViaShare {
		return s.authorizeShare(ctx, a, sessionID, act)
	}
	if a.UserID == "" {
		return SessionRoleNone, ErrUnauthenticated
	}
	if err := s.credentialLive(ctx, a); err != nil {
		return SessionRoleNone, err
	}
	acc, err := s.store.SessionAccess(ctx, sessionID, a.UserID)
	if isNotFound(err) {
		return SessionRoleNone, fmt.Errorf("session %s: %w", sessionID, ErrNotFound)
	}
	if err != nil {
		return SessionRoleNone, fmt.Errorf("authorize: %w", err)
	}
	if !acc.UserFound || acc.UserDisabled {
		return SessionRoleNone, ErrUnauthenticated
	}
	role := RoleOf(acc, a.UserID)
	if role == SessionRoleNone {
		return SessionRoleNone, fmt.Errorf("session %s: %w", sessionID, ErrNotFound)
	}
	if acc.ParentID != "" {
		// A subagent's session: whoever may read the parent may read it;
		// nobody drives or manages it (its parent's task call does).
		role = SessionRoleViewer
	}
	if !role.Can(act) {
		return role, fmt.Errorf("%s may not %s session %s: %w", role, act, sessionID, ErrForbidden)
	}
	return role, nil
}

// RoleOf is userID's role on a session given its access facts: the
// strongest of owner, admin, then membership. Authorize uses it, and so
// does a listing that reads the facts of many sessions at once.
func RoleOf(acc Access, userID string) SessionRole {
	switch {
	case acc.OwnerID == userID:
		return SessionRoleOwner
	case acc.UserRole == RoleAdmin:
		return SessionRoleAdmin
	case acc.MemberRole == SessionRoleCollaborator, acc.MemberRole == SessionRoleViewer:
		return acc.MemberRole
	}
	return SessionRoleNone
}

// authorizeShare lets a share link read its own session while the link
// is live; everything else needs an account.
func (s *Service) authorizeShare(ctx context.Context, a *Actor, sessionID string, act Action) (SessionRole, error) {
	if !shareActions[act] {
		return SessionRoleNone, ErrUnauthenticated
	}
	if sessionID != a.ShareSessionID {
		// A link reads its session's subagents too (their transcripts
		// are nested in its transcript), and nothing else.
		acc, err := s.store.SessionAccess(ctx, sessionID, "")
		if err != nil && !isNotFound(err) {
			return SessionRoleNone, fmt.Errorf("authorize: %w", err)
		}
		if err != nil || acc.ParentID == "" || acc.ParentID != a.ShareSessionID {
			return SessionRoleNone, ErrUnauthenticated
		}
	}
	l, err := s.store.ShareLinkByID(ctx, a.ShareLinkID)
	if isNotFound(err) {
		return SessionRoleNone, ErrUnauthenticated
	}
	if err != nil {
		return SessionRoleNone, fmt.Errorf("authorize: %w", err)
	}
	if !linkLive(l, s.now()) || l.SessionID != a.ShareSessionID {
		return SessionRoleNone, ErrUnauthenticated
	}
	if _, err := s.store.SessionAccess(ctx, sessionID, ""); err != nil {
		if isNotFound(err) {
			return SessionRoleNone, fmt.Errorf("session %s: %w", sessionID, ErrNotFound)
		}
		return SessionRoleNone, fmt.Errorf("authorize: %w", err)
	}
	return SessionRoleViewer, nil
}

// credentialLive re-checks the login session or token an actor came from:
// logged out, expired or revoked → ErrUnauthenticated.
func (s *Service) credentialLive(ctx context.Context, a *Actor) error {
	if a.CredentialID == "" {
		return nil
	}
	live := false
	switch a.Via {
	case ViaCookie:
		l, err := s.store.LoginByID(ctx, a.CredentialID)
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("authorize: %w", err)
		}
		live = err == nil && s.now().Before(s.deadline(l))
		if live {
			s.slide(ctx, l) // activity on a socket counts as use
		}
	case ViaToken:
		t, err := s.store.TokenByID(ctx, a.CredentialID)
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("authorize: %w", err)
		}
		live = err == nil && t.RevokedAt == nil
	}
	if !live {
		return ErrUnauthenticated
	}
	return nil
}

// CanCreateSession allows any real, enabled user. The actor was resolved
// from a live credential, which already proves the account is enabled.
func (s *Service) CanCreateSession(a *Actor) error {
	if !a.IsUser() {
		return ErrUnauthenticated
	}
	return nil
}

func linkLive(l ShareLink, now time.Time) bool {
	return l.RevokedAt == nil && (l.ExpiresAt == nil || now.Before(*l.ExpiresAt))
}
