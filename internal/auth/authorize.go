package auth

import (
	"context"
	"fmt"
	"time"
)

// Action is what an actor wants to do with a session.
type Action string

// Actions, from weakest to strongest.
const (
	// ActionRead: transcript, events, subscribe, export.
	ActionRead Action = "read"
	// ActionFork: read access by a real user; the fork belongs to the forker.
	ActionFork Action = "fork"
	// ActionWrite: followup, steer, cancel, queue edit/remove, approve,
	// answer, set_mode, set_model, compact.
	ActionWrite Action = "write"
	// ActionManage: rename, archive, delete, members, share links.
	ActionManage Action = "manage"
)

// allowed is the role × action table.
var allowed = map[SessionRole]map[Action]bool{
	SessionRoleOwner:        {ActionRead: true, ActionFork: true, ActionWrite: true, ActionManage: true},
	SessionRoleAdmin:        {ActionRead: true, ActionFork: true, ActionWrite: true, ActionManage: true},
	SessionRoleCollaborator: {ActionRead: true, ActionFork: true, ActionWrite: true},
	SessionRoleViewer:       {ActionRead: true, ActionFork: true},
}

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
	if _, ok := allowed[SessionRoleOwner][act]; !ok {
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
	role := roleOf(acc, a.UserID)
	if role == SessionRoleNone {
		return SessionRoleNone, fmt.Errorf("session %s: %w", sessionID, ErrNotFound)
	}
	if !allowed[role][act] {
		return role, fmt.Errorf("%s may not %s session %s: %w", role, act, sessionID, ErrForbidden)
	}
	return role, nil
}

// roleOf picks the strongest role: owner, then admin, then membership.
func roleOf(acc Access, userID string) SessionRole {
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
	if act != ActionRead || sessionID != a.ShareSessionID {
		return SessionRoleNone, ErrUnauthenticated
	}
	l, err := s.store.ShareLinkByID(ctx, a.ShareLinkID)
	if isNotFound(err) {
		return SessionRoleNone, ErrUnauthenticated
	}
	if err != nil {
		return SessionRoleNone, fmt.Errorf("authorize: %w", err)
	}
	if !linkLive(l, s.now()) || l.SessionID != sessionID {
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
