package service

import (
	"encoding/json"
	"time"

	"harness/internal/auth"
	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/models"
	"harness/internal/session"
)

// Limits.
const (
	// MaxMessageBytes bounds one message's text.
	MaxMessageBytes = 256 << 10
	// MaxTitleBytes bounds a session title.
	MaxTitleBytes = 255
	// DefaultEventsLimit and MaxEventsLimit bound one Events page.
	DefaultEventsLimit = 500
	MaxEventsLimit     = 5000
)

// KindSubagent is SessionRow.Kind of a subagent's session.
const KindSubagent = models.KindSubagent

// SessionRow is a session as a list (and the sidebar) shows it.
type SessionRow struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	OwnerID  string `json:"ownerId"`
	ParentID string `json:"parentId,omitempty"`
	// Kind is "subagent" for a subagent's session (ParentID is the
	// parent whose task call runs it); absent for ordinary sessions.
	Kind     string                 `json:"kind,omitempty"`
	Provider string                 `json:"provider"`
	Model    string                 `json:"model"`
	Mode     session.PermissionMode `json:"mode"`
	// Effort is the chosen reasoning effort; absent: the model's default.
	Effort    llm.Effort       `json:"effort,omitempty"`
	Archived  bool             `json:"archived"`
	Status    driver.Status    `json:"status"`
	Head      int64            `json:"head"`
	Role      auth.SessionRole `json:"role"`
	CreatedAt time.Time        `json:"createdAt"`
	UpdatedAt time.Time        `json:"updatedAt"`
	// Workspace is where the session's tools work.
	Workspace WorkspaceInfo `json:"workspace"`
}

// Session is one session in full: its row plus the live state a client
// needs to render it (queue and pending interactions).
type Session struct {
	SessionRow
	// ForkSeq is the parent's boundary seq, for forks.
	ForkSeq      *int64               `json:"forkSeq,omitempty"`
	Queue        driver.Queue         `json:"queue"`
	Interactions []driver.Interaction `json:"interactions"`
	// Context is the context meter: the next request's size and window.
	Context ContextMeter `json:"context"`
	// AllowedTools are the tools allowed for the session ("Allow for this
	// session"), sorted; empty when none.
	AllowedTools []string `json:"allowedTools"`
}

// NewSession are the options of CreateSession; all are optional.
type NewSession struct {
	Title    string                 `json:"title,omitempty"`
	Provider string                 `json:"provider,omitempty"`
	Model    string                 `json:"model,omitempty"`
	Mode     session.PermissionMode `json:"mode,omitempty"`
	// Workspace says where the session works (default: a fresh directory).
	Workspace WorkspaceRequest `json:"workspace,omitzero"`
	// Prompt is a first message to send; for a cloned workspace it is sent
	// once the clone is ready.
	Prompt string `json:"prompt,omitempty"`
}

// ListQuery selects sessions for ListSessions.
type ListQuery struct {
	// Q searches titles and message text (case-insensitive).
	Q string `json:"q,omitempty"`
	// Archived filters by the archived flag; nil lists both.
	Archived *bool `json:"archived,omitempty"`
	// Limit is the page size (default 50, at most 500).
	Limit int `json:"limit,omitempty"`
	// Cursor is a previous page's Next.
	Cursor string `json:"cursor,omitempty"`
}

// SessionList is one page of sessions, newest activity first.
type SessionList struct {
	Sessions []SessionRow `json:"sessions"`
	// Next is the cursor of the next page, "" on the last page.
	Next string `json:"next,omitempty"`
}

// EventPage is a range of a session's log.
type EventPage struct {
	// Events are the events, each the exact stored JSON.
	Events []json.RawMessage `json:"events"`
	// Head is the last seq of the log (-1 when empty).
	Head int64 `json:"head"`
}

// SendMode is how a message enters the session.
type SendMode string

// Send modes.
const (
	// SendFollowup queues the message as the prompt of its own turn.
	SendFollowup SendMode = "followup"
	// SendSteer enters it into the running turn at its next step (or
	// starts a turn when idle).
	SendSteer SendMode = "steer"
)

// Message is a message a person sends.
type Message struct {
	Content string   `json:"content"`
	Mode    SendMode `json:"mode,omitempty"`
	// ClientID is the client's request id, recorded on the message source
	// so a client can match its optimistic echo.
	ClientID string `json:"clientId,omitempty"`
	// Attachments are ids of images uploaded to the session
	// (UploadAttachment), sent after the text in this order.
	Attachments []string `json:"attachments,omitempty"`
}

// Decision answers an approval.
type Decision string

// Decisions.
const (
	// DecisionAllow runs the call once.
	DecisionAllow Decision = "allow"
	// DecisionAllowSession runs the call and every later call of the same
	// tool in the session, without asking, until revoked.
	DecisionAllowSession Decision = "allow-session"
	// DecisionDeny rejects the call.
	DecisionDeny Decision = "deny"
)

// outcome is the approval outcome a decision records.
func (d Decision) outcome() (session.ApprovalOutcome, bool) {
	switch d {
	case DecisionAllow:
		return session.ApprovalAllowedOnce, true
	case DecisionAllowSession:
		return session.ApprovalAllowedSession, true
	case DecisionDeny:
		return session.ApprovalRejected, true
	}
	return "", false
}

// Patch changes a session; nil fields are left alone. Title and Archived
// need the manage right, the others the write right.
type Patch struct {
	Title    *string                 `json:"title,omitempty"`
	Archived *bool                   `json:"archived,omitempty"`
	Mode     *session.PermissionMode `json:"mode,omitempty"`
	Provider *string                 `json:"provider,omitempty"`
	Model    *string                 `json:"model,omitempty"`
	// Effort sets the reasoning effort ("": the model's default).
	Effort *llm.Effort `json:"effort,omitempty"`
	// Network lets the session's tools use the network; admins only.
	Network *bool `json:"network,omitempty"`
}

// Route is a provider and model.
type Route struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
}

// Provider is one model route as clients see it (no secrets).
type Provider struct {
	Name    string `json:"name"`
	Label   string `json:"label"`
	Offline bool   `json:"offline,omitempty"`
	// ImageInput: the route takes images.
	ImageInput   bool            `json:"imageInput,omitempty"`
	DefaultModel string          `json:"defaultModel"`
	Models       []llm.ModelInfo `json:"models"`
}

// Providers lists the routes and the default one.
type Providers struct {
	Default   Route      `json:"default"`
	Providers []Provider `json:"providers"`
}

// Member is a user's grant on a session (the owner is not a member).
type Member struct {
	UserID      string           `json:"userId"`
	Name        string           `json:"name"`
	DisplayName string           `json:"displayName,omitempty"`
	Role        auth.SessionRole `json:"role"`
	CreatedAt   time.Time        `json:"createdAt"`
}

// ShareLink is a share link's metadata (the token is never listed).
type ShareLink struct {
	ID        string     `json:"id"`
	CreatedBy string     `json:"createdBy"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
}

// NewShareLink is a created share link; Token is shown only once.
type NewShareLink struct {
	ShareLink
	Token string `json:"token"`
	// Path is the link's page, relative to the server.
	Path string `json:"path"`
}
