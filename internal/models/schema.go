// Package models holds the GORM models and the Store: sessions, their event
// logs (with the batched writer), users, login sessions, API tokens, members,
// share links and settings. SQLite is the embedded default; the same code runs
// on PostgreSQL.
package models

import "time"

// User is an account. PasswordHash is empty for a user who cannot log in yet.
type User struct {
	ID           string `gorm:"primaryKey;size:36"`
	Name         string `gorm:"uniqueIndex;size:64;not null"`
	DisplayName  string `gorm:"size:128"`
	PasswordHash string `gorm:"size:255"`
	Role         string `gorm:"size:16;not null;default:user"` // admin | user
	Disabled     bool   `gorm:"not null;default:false"`
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// LoginSession is a browser login. ID is the SHA-256 of the cookie value, so
// a database leak does not leak live cookies.
type LoginSession struct {
	ID         string `gorm:"primaryKey;size:64"`
	UserID     string `gorm:"index;size:36;not null"`
	CSRFToken  string `gorm:"size:64;not null"`
	IP         string `gorm:"size:64"`
	UserAgent  string `gorm:"size:255"`
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time `gorm:"index"`
}

// APIToken is a bearer token for scripts; only its hash is stored.
type APIToken struct {
	ID         string `gorm:"primaryKey;size:36"`
	UserID     string `gorm:"index;size:36;not null"`
	Name       string `gorm:"size:128"`
	Hash       string `gorm:"uniqueIndex;size:64;not null"`
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// Session is a conversation's metadata; its log lives in events.
type Session struct {
	ID        string `gorm:"primaryKey;size:36"`
	OwnerID   string `gorm:"index:idx_sessions_owner_updated,priority:1;size:36;not null"`
	Title     string `gorm:"size:255"`
	Workspace string `gorm:"size:1024"` // absolute workspace directory
	// WorkspaceKind is where the workspace came from: fresh, dir, clone or
	// fork (empty in rows from before: fresh).
	WorkspaceKind string `gorm:"size:16;not null;default:''"`
	// WorkspaceSource is what it came from: the opened directory, the
	// clone source, or the parent session's id.
	WorkspaceSource string `gorm:"size:1024;not null;default:''"`
	// WorkspaceState is "" when ready, "preparing" while a clone or a
	// fork's copy runs, "failed" when a clone did not work and
	// "interrupted" when a crash cut a fork's copy short.
	WorkspaceState string `gorm:"size:16;not null;default:''"`
	// PendingPrompt is the first message of a session whose workspace is
	// being prepared; it is sent once the workspace is ready.
	PendingPrompt string `gorm:"type:text;not null;default:''"`
	// Network lets the session's tools use the network (set by an admin).
	Network  bool   `gorm:"not null;default:false"`
	Provider string `gorm:"size:64"`
	Model    string `gorm:"size:128"`
	Mode     string `gorm:"size:16"` // permission mode
	// Effort is the reasoning effort chosen for the session ("" = the
	// route's default); the log's last model/effort, kept like Mode.
	Effort   string `gorm:"size:16;not null;default:''"`
	ParentID string `gorm:"index;size:36"`
	ForkSeq  int64  // boundary seq in the parent, when forked
	// Kind is "" for a session people talk to and KindSubagent for the
	// child session a parent's task call runs (ParentID is the parent):
	// it is read through its parent and kept out of the session list.
	Kind string `gorm:"size:16;not null;default:''"`
	// SeedLength is session.Header.SeedLength.
	SeedLength int64
	Archived   bool `gorm:"not null;default:false"`
	// LogKey is the session in log_rows: a small integer, unique, assigned
	// when the row is created (logkeys.go), never changed.
	LogKey int64 `gorm:"not null;default:0"`
	// TodoSeq is the seq of the log's last todo/write (-1: none), kept by
	// the batched writer like Title: a page that opens a stored session
	// shows its todo list without reading the log.
	TodoSeq int64 `gorm:"not null;default:-1"`
	// Head is the last stored seq (-1 when the log is empty), maintained by
	// the batched writer.
	Head int64 `gorm:"not null;default:-1"`
	// PendingInbox counts acknowledged queue items not yet claimed; sessions
	// with pending items are loaded and run at server start.
	PendingInbox int `gorm:"not null;default:0"`
	CreatedAt    time.Time
	UpdatedAt    time.Time `gorm:"index:idx_sessions_owner_updated,priority:2"`
}

// KindSubagent is Session.Kind of a subagent's child session.
const KindSubagent = "subagent"

// Member grants a user a role on a session other than its owner.
type Member struct {
	SessionID string `gorm:"primaryKey;size:36"`
	UserID    string `gorm:"primaryKey;size:36;index"`
	Role      string `gorm:"size:16;not null"` // collaborator | viewer
	CreatedAt time.Time
}

// ShareLink is a read-only live transcript link; only the token's hash is
// stored.
type ShareLink struct {
	ID        string `gorm:"primaryKey;size:36"`
	SessionID string `gorm:"index;size:36;not null"`
	TokenHash string `gorm:"uniqueIndex;size:64;not null"`
	CreatedBy string `gorm:"size:36"`
	CreatedAt time.Time
	ExpiresAt *time.Time
	RevokedAt *time.Time
}

// Setting is one server-wide setting (JSON value).
type Setting struct {
	Key       string `gorm:"primaryKey;size:128"`
	Value     string `gorm:"type:text"`
	UpdatedAt time.Time
}

// ProviderConfig is an admin-configured model route. APIKey is write-only:
// it is never returned to a browser. The column holds it sealed
// (internal/secrets; 512 key bytes seal to about 730); SettingsStore
// seals and opens it, and sets KeyError when a stored key cannot be opened.
type ProviderConfig struct {
	Name         string `gorm:"primaryKey;size:64"`
	Kind         string `gorm:"size:16;not null"` // deepseek | openai
	BaseURL      string `gorm:"size:512"`
	APIKey       string `gorm:"size:1024"`
	DefaultModel string `gorm:"size:128"`
	Models       string `gorm:"type:text"` // JSON array of model ids
	Enabled      bool   `gorm:"not null;default:true"`
	// Prices per million tokens (nil: not set) and a context window that
	// overrides the adapter's (0: not set), for every model of the route.
	InputPrice       *float64
	CachedInputPrice *float64
	OutputPrice      *float64
	ContextWindow    int64 `gorm:"not null;default:0"`
	// ImageInput: the route's models take images.
	ImageInput bool `gorm:"not null;default:false"`
	UpdatedAt  time.Time
	// KeyError, when set, says why the stored key could not be opened
	// (wraps secrets.ErrCannotOpen); APIKey is then empty. Not a column.
	KeyError error `gorm:"-"`
}

// MCPServerRow is an MCP server an admin added in Settings (servers from
// HARNESS_MCP_CONFIG are not stored). Spec is its configuration without
// secret values, as JSON in the config file's form (internal/mcp); Secrets
// holds its env and header values, sealed as one JSON object (bound to
// "mcp:<name>"), and is never returned to a browser.
type MCPServerRow struct {
	Name      string `gorm:"primaryKey;size:32"`
	Spec      string `gorm:"type:text;not null"`
	Secrets   string `gorm:"type:text;not null;default:''"`
	UpdatedAt time.Time
}

// TableName keeps the table's name readable.
func (MCPServerRow) TableName() string { return "mcp_servers" }

// AllModels lists every table, in migration order.
func AllModels() []any {
	return []any{
		&User{}, &LoginSession{}, &APIToken{}, &Session{}, &LogRow{},
		&Member{}, &ShareLink{}, &Setting{}, &ProviderConfig{}, &MCPServerRow{}, &Attachment{},
	}
}
