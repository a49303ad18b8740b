package auth

import (
	"context"
	"time"
)

// User is an account as other packages see it; the password hash never
// leaves this package.
type User struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	DisplayName string    `json:"display_name,omitempty"`
	Role        Role      `json:"role"`
	Disabled    bool      `json:"disabled"`
	HasPassword bool      `json:"has_password"`
	CreatedAt   time.Time `json:"created_at"`
}

// UserRecord is a stored user, with its bcrypt hash ("" = cannot log in).
type UserRecord struct {
	User
	PasswordHash string `json:"-"`
}

// UserCounts summarises the accounts for bootstrap and exposure checks.
type UserCounts struct {
	Total int64 `json:"total"`
	// WithPassword counts enabled users who can log in.
	WithPassword int64 `json:"with_password"`
	// ActiveAdmins counts enabled admins who can log in.
	ActiveAdmins int64 `json:"active_admins"`
}

// LoginRecord is a stored login session. ID is the SHA-256 of the cookie.
type LoginRecord struct {
	ID         string
	UserID     string
	CSRFToken  string
	IP         string
	UserAgent  string
	CreatedAt  time.Time
	LastSeenAt time.Time
	// ExpiresAt is the earlier of the idle and the absolute deadline.
	ExpiresAt time.Time
}

// Token is an API token's metadata; the plaintext is shown once at creation
// and only its hash is stored.
type Token struct {
	ID         string     `json:"id"`
	UserID     string     `json:"user_id"`
	Name       string     `json:"name"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}

// TokenRecord is a stored token with its SHA-256 hash (hex).
type TokenRecord struct {
	Token
	Hash string `json:"-"`
}

// Member is a user's grant on a session other than its owner.
type Member struct {
	SessionID   string      `json:"session_id"`
	UserID      string      `json:"user_id"`
	Name        string      `json:"name"`
	DisplayName string      `json:"display_name,omitempty"`
	Role        SessionRole `json:"role"`
	CreatedAt   time.Time   `json:"created_at"`
}

// ShareLink is a read-only link's metadata; the token itself is shown once.
type ShareLink struct {
	ID        string     `json:"id"`
	SessionID string     `json:"session_id"`
	CreatedBy string     `json:"created_by"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// ShareLinkRecord is a stored link with its token's SHA-256 hash (hex).
type ShareLinkRecord struct {
	ShareLink
	TokenHash string `json:"-"`
}

// Access is what Authorize needs to know about one (session, user) pair,
// read in one query.
type Access struct {
	OwnerID    string
	MemberRole SessionRole // collaborator, viewer or ""
	// UserFound is false when the user id matched no account.
	UserFound    bool
	UserRole     Role
	UserDisabled bool
	// ParentID is set for a subagent's child session: the facts above
	// are its parent's, and every role on it is at most a viewer's (the
	// child is driven by its parent's task call, never by people).
	ParentID string
}

// Store persists accounts and grants. Implementations return errors
// wrapping ErrNotFound for missing rows and ErrExists for duplicates.
type Store interface {
	CountUsers(ctx context.Context) (UserCounts, error)
	InsertUser(ctx context.Context, u UserRecord) error
	UserByName(ctx context.Context, name string) (UserRecord, error)
	UserByID(ctx context.Context, id string) (UserRecord, error)
	ListUsers(ctx context.Context) ([]UserRecord, error)
	// UpdateUser writes display name, role, disabled and password hash.
	UpdateUser(ctx context.Context, u UserRecord) error
	// DeleteUser removes the user with its logins, tokens and memberships.
	DeleteUser(ctx context.Context, id string) error

	InsertLogin(ctx context.Context, l LoginRecord) error
	LoginByID(ctx context.Context, id string) (LoginRecord, error)
	TouchLogin(ctx context.Context, id string, lastSeen, expires time.Time) error
	DeleteLogin(ctx context.Context, id string) error
	DeleteUserLogins(ctx context.Context, userID string) error
	DeleteExpiredLogins(ctx context.Context, now time.Time) (int64, error)

	InsertToken(ctx context.Context, t TokenRecord) error
	TokenByHash(ctx context.Context, hash string) (TokenRecord, error)
	TokenByID(ctx context.Context, id string) (Token, error)
	ListTokens(ctx context.Context, userID string) ([]Token, error)
	// RevokeToken revokes a token of userID; ErrNotFound if no live token matches.
	RevokeToken(ctx context.Context, userID, id string, at time.Time) error
	TouchToken(ctx context.Context, id string, at time.Time) error

	// SessionAccess returns ErrNotFound when the session does not exist.
	SessionAccess(ctx context.Context, sessionID, userID string) (Access, error)
	PutMember(ctx context.Context, sessionID, userID string, role SessionRole, at time.Time) error
	DeleteMember(ctx context.Context, sessionID, userID string) error
	ListMembers(ctx context.Context, sessionID string) ([]Member, error)
	// ForgetSession drops a session's members and share links.
	ForgetSession(ctx context.Context, sessionID string) error

	InsertShareLink(ctx context.Context, l ShareLinkRecord) error
	ShareLinkByHash(ctx context.Context, hash string) (ShareLink, error)
	ShareLinkByID(ctx context.Context, id string) (ShareLink, error)
	// RevokeShareLink revokes a link of sessionID; ErrNotFound if no live link matches.
	RevokeShareLink(ctx context.Context, sessionID, id string, at time.Time) error
	ListShareLinks(ctx context.Context, sessionID string) ([]ShareLink, error)

	// PutSetupToken replaces the one-time setup token's hash.
	PutSetupToken(ctx context.Context, hash string) error
	// SetupTokenValid reports whether hash is the current setup token and
	// no user exists yet.
	SetupTokenValid(ctx context.Context, hash string) (bool, error)
	// ConsumeSetupToken atomically checks SetupTokenValid, inserts admin and
	// deletes the token; ErrNotFound when the token is not valid.
	ConsumeSetupToken(ctx context.Context, hash string, admin UserRecord) error
}
