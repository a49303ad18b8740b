// Package auth holds accounts and access control: users and their bcrypt
// password hashes, login sessions, API tokens, per-session roles, share links,
// first-admin bootstrap and the single authorization function, Authorize.
// What each session role may do is one table, read through SessionRole.Can;
// nothing outside this package lists roles to decide what is allowed.
// It is storage-agnostic: persistence goes through the Store interface, which
// internal/models implements.
package auth

import "context"

// Role is a user's server-wide role.
type Role string

// Server-wide roles.
const (
	RoleAdmin Role = "admin"
	RoleUser  Role = "user"
)

// SessionRole is what an actor is to one session.
type SessionRole string

// Session roles, strongest first. SessionRoleNone means no access.
const (
	SessionRoleOwner        SessionRole = "owner"
	SessionRoleAdmin        SessionRole = "admin"
	SessionRoleCollaborator SessionRole = "collaborator"
	SessionRoleViewer       SessionRole = "viewer"
	SessionRoleNone         SessionRole = ""
)

// Via says how an actor authenticated.
type Via string

// Ways to authenticate.
const (
	ViaCookie Via = "cookie"
	ViaToken  Via = "token"
	ViaShare  Via = "share"
	// ViaServer: the server acts for a user on its own initiative (a
	// message the user wrote earlier, sent when it can be); there is no
	// credential to re-check, but the account must still be enabled.
	ViaServer Via = "server"
)

// Actor is who is asking. A nil *Actor is anonymous.
type Actor struct {
	UserID      string `json:"user_id,omitempty"`
	Name        string `json:"name,omitempty"`
	DisplayName string `json:"display_name,omitempty"`
	Role        Role   `json:"role,omitempty"`
	Via         Via    `json:"via"`
	// ShareSessionID is, for a share-link viewer, the one session it may read.
	ShareSessionID string `json:"share_session_id,omitempty"`
	ShareLinkID    string `json:"share_link_id,omitempty"`
	// CredentialID is the login session (cookie) or API token (token) the
	// actor was resolved from; Authorize re-checks that it is still live,
	// so a logout or a revocation also stops a long-lived WebSocket.
	CredentialID string `json:"-"`
}

// IsUser reports whether a is a real account (not anonymous, not a share link).
func (a *Actor) IsUser() bool { return a != nil && a.Via != ViaShare && a.UserID != "" }

// IsAdmin reports whether a is a real account with the admin role.
func (a *Actor) IsAdmin() bool { return a.IsUser() && a.Role == RoleAdmin }

type actorKey struct{}

// ContextWithActor returns ctx carrying a, for code below HTTP (the WebSocket
// loop) that has no echo context.
func ContextWithActor(ctx context.Context, a *Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFromContext returns the actor stored by ContextWithActor, or nil.
func ActorFromContext(ctx context.Context) *Actor {
	a, _ := ctx.Value(actorKey{}).(*Actor)
	return a
}
