package client

import (
	"encoding/json"
	"time"
)

// Session statuses.
const (
	StatusIdle    = "idle"
	StatusRunning = "running"
)

// SessionRow is a session as lists and the sidebar show it.
type SessionRow struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	OwnerID  string `json:"ownerId"`
	ParentID string `json:"parentId,omitempty"`
	// Kind is "subagent" for a subagent's session (ParentID is the parent
	// whose task call runs it); "" for ordinary sessions.
	Kind      string    `json:"kind,omitempty"`
	Provider  string    `json:"provider"`
	Model     string    `json:"model"`
	Mode      string    `json:"mode"`
	Effort    string    `json:"effort,omitempty"` // "": the model's default
	Archived  bool      `json:"archived"`
	Status    string    `json:"status"`
	Head      int64     `json:"head"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	Workspace Workspace `json:"workspace"`
}

// Workspace is where a session's tools work.
type Workspace struct {
	Kind   string `json:"kind"` // fresh | dir | clone | fork
	Path   string `json:"path"`
	Source string `json:"source,omitempty"`
	// State is "" when ready, "preparing" while a clone or a fork's copy
	// runs, "failed" (a clone that did not work; the session goes on in an
	// empty workspace), "interrupted" (a crash cut the fork's copy short:
	// the session takes no input; delete it).
	State   string `json:"state,omitempty"`
	Network bool   `json:"network"`
}

// WorkspaceRequest says where a new session works; the zero value is a
// fresh empty directory.
type WorkspaceRequest struct {
	Kind   string `json:"kind,omitempty"`   // fresh | dir | clone
	Path   string `json:"path,omitempty"`   // dir: an absolute directory under a workspace root
	Source string `json:"source,omitempty"` // clone: an https URL on an allowed host, or a local repository
}

// Session is one session in full.
type Session struct {
	SessionRow
	ForkSeq      *int64        `json:"forkSeq,omitempty"`
	Queue        Queue         `json:"queue"`
	Interactions []Interaction `json:"interactions"`
	Context      ContextMeter  `json:"context"`
	// AllowedTools are the tools allowed for the session (approved with
	// DecisionAllowSession and not revoked), sorted.
	AllowedTools []string `json:"allowedTools"`
}

// ContextMeter is how full a session's context window is: the size of its
// next request in tokens, the route's window (0: unknown) and the share.
type ContextMeter struct {
	Tokens  int64   `json:"tokens"`
	Window  int64   `json:"window"`
	Percent float64 `json:"percent"`
}

// CompactResult is the outcome of a manual compaction. Compacted is false
// when there was nothing to compact yet.
type CompactResult struct {
	Compacted    bool         `json:"compacted"`
	CompactionID string       `json:"compactionId,omitempty"`
	CommandID    string       `json:"commandId"`
	Replaced     int          `json:"replaced"`
	TokensSaved  int64        `json:"tokensSaved"`
	Message      string       `json:"message"`
	Context      ContextMeter `json:"context"`
}

// SessionList is a page of sessions.
type SessionList struct {
	Sessions []SessionRow `json:"sessions"`
	Next     string       `json:"next,omitempty"`
}

// NewSession are CreateSession's options; all optional.
type NewSession struct {
	Title    string `json:"title,omitempty"`
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	Mode     string `json:"mode,omitempty"` // read-only | ask | auto
	// Workspace says where the session works (default: a fresh directory).
	Workspace WorkspaceRequest `json:"workspace,omitzero"`
	// Prompt is a first message, sent once the workspace is ready.
	Prompt string `json:"prompt,omitempty"`
}

// ListOptions select sessions.
type ListOptions struct {
	Q        string
	Archived *bool
	Limit    int
	Cursor   string
}

// Patch changes a session; nil fields stay.
type Patch struct {
	Title    *string `json:"title,omitempty"`
	Archived *bool   `json:"archived,omitempty"`
	Mode     *string `json:"mode,omitempty"`
	Provider *string `json:"provider,omitempty"`
	Model    *string `json:"model,omitempty"`
	// Effort sets the reasoning effort ("": the model's default).
	Effort *string `json:"effort,omitempty"`
	// Network lets the session's tools use the network (admins only).
	Network *bool `json:"network,omitempty"`
}

// Event is one durable log event.
type Event struct {
	Seq             int64           `json:"seq"`
	Time            int64           `json:"time"` // epoch ms
	Type            string          `json:"type"`
	Data            json.RawMessage `json:"data"`
	Ignorable       bool            `json:"ignorable,omitempty"`
	SurfaceOp       json.RawMessage `json:"surfaceOp,omitempty"`
	SourceEventSeqs []int64         `json:"sourceEventSeqs,omitempty"`
	// From is set on an event of a session/events push that stands for a
	// run of text or reasoning deltas of one block (seqs From..Seq): the
	// last delta's envelope with the run's text. 0 otherwise.
	From int64 `json:"from,omitempty"`
}

// EventPage is a range of a log and the log's head.
type EventPage struct {
	Events []Event `json:"events"`
	Head   int64   `json:"head"`
}

// Queue is a session's pending inbox.
type Queue struct {
	Queued   []Message `json:"queued"`
	Steering []Message `json:"steering"`
}

// Message is a model-visible message.
type Message struct {
	ID      string         `json:"id"`
	Role    string         `json:"role"`
	Content []ContentBlock `json:"content"`
	Source  Source         `json:"source"`
}

// Text joins the message's text blocks.
func (m Message) Text() string {
	var s string
	for _, b := range m.Content {
		if b.Type == "text" {
			s += b.Text
		}
	}
	return s
}

// ContentBlock is one piece of message content.
type ContentBlock struct {
	Type       string         `json:"type"`
	Text       string         `json:"text,omitempty"`
	ID         string         `json:"id,omitempty"`
	Name       string         `json:"name,omitempty"`
	Arguments  string         `json:"arguments,omitempty"`
	ToolCallID string         `json:"toolCallId,omitempty"`
	Content    []ContentBlock `json:"content,omitempty"`
	IsError    bool           `json:"isError,omitempty"`
	// An image block: the stored image (Attachment) and what the log says
	// of it; Name is its file name.
	Attachment string `json:"attachment,omitempty"`
	MediaType  string `json:"mediaType,omitempty"`
	Size       int64  `json:"size,omitempty"`
	Width      int    `json:"width,omitempty"`
	Height     int    `json:"height,omitempty"`
}

// Source is who produced a message.
type Source struct {
	Kind     string `json:"kind"`
	UserID   string `json:"userId,omitempty"`
	Name     string `json:"name,omitempty"`
	ClientID string `json:"clientId,omitempty"`
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	CallID   string `json:"callId,omitempty"`
	Plugin   string `json:"plugin,omitempty"`
	// Form is a plugin message's presentation hint (snapshot, notice,
	// instructions); CompactionID names a compaction's checkpoint.
	Form         string `json:"form,omitempty"`
	CompactionID string `json:"compactionId,omitempty"`
	// Session is the parent session of an agent-written message (a
	// subagent's prompt).
	Session string `json:"session,omitempty"`
}

// Interaction is a pending or resolved approval or question.
type Interaction struct {
	ID        string     `json:"id"`
	Kind      string     `json:"kind"` // approval | question
	Turn      int        `json:"turn"`
	CallID    string     `json:"callId,omitempty"`
	ToolName  string     `json:"toolName,omitempty"`
	Arguments string     `json:"arguments,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	Questions []Question `json:"questions,omitempty"`
	Outcome   string     `json:"outcome,omitempty"`
	By        *Actor     `json:"by,omitempty"`
	// Preview is what an approved call would do: a diff or a command.
	Preview *ApprovalPreview `json:"preview,omitempty"`
}

// ApprovalPreview is what an approval's call would do: kind "diff" (Path,
// Diff, Added, Removed, Truncated, Created) or "command" (Command,
// Description).
type ApprovalPreview struct {
	Kind        string `json:"kind"`
	Path        string `json:"path,omitempty"`
	Diff        string `json:"diff,omitempty"`
	Added       int    `json:"added,omitempty"`
	Removed     int    `json:"removed,omitempty"`
	Truncated   bool   `json:"truncated,omitempty"`
	Created     bool   `json:"created,omitempty"`
	Command     string `json:"command,omitempty"`
	Description string `json:"description,omitempty"`
}

// Decision answers an approval.
type Decision string

// Decisions.
const (
	// DecisionAllow runs the call once.
	DecisionAllow Decision = "allow"
	// DecisionAllowSession runs the call and, without asking, every later
	// call of the same tool in the session until RevokeTool.
	DecisionAllowSession Decision = "allow-session"
	// DecisionDeny rejects the call.
	DecisionDeny Decision = "deny"
)

// Question is one question of a batch.
type Question struct {
	ID          string           `json:"id"`
	Question    string           `json:"question"`
	Header      string           `json:"header,omitempty"`
	Options     []QuestionOption `json:"options,omitempty"`
	MultiSelect bool             `json:"multiSelect,omitempty"`
}

// QuestionOption is an offered answer.
type QuestionOption struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// Answer answers one question.
type Answer struct {
	ID       string   `json:"id"`
	Selected []string `json:"selected"`
	Custom   string   `json:"custom,omitempty"`
}

// Actor is who did something.
type Actor struct {
	UserID string `json:"userId,omitempty"`
	Name   string `json:"name,omitempty"`
}

// Failure is a model or driver failure (agent/error).
type Failure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Status  int    `json:"status,omitempty"`
	// RetryAfterMs is the provider's Retry-After hint; RequestID its
	// request id.
	RetryAfterMs int64  `json:"providerRetryAfterMs,omitempty"`
	RequestID    string `json:"requestId,omitempty"`
}

// Route is a provider and model.
type Route struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
}

// Providers are the model routes.
type Providers struct {
	Default   Route      `json:"default"`
	Providers []Provider `json:"providers"`
}

// Provider is one route.
type Provider struct {
	Name    string `json:"name"`
	Label   string `json:"label"`
	Offline bool   `json:"offline,omitempty"`
	// ImageInput: the route takes images (UploadImage, SendImages).
	ImageInput   bool    `json:"imageInput,omitempty"`
	DefaultModel string  `json:"defaultModel"`
	Models       []Model `json:"models"`
}

// Model is catalog metadata of a model.
type Model struct {
	ID               string   `json:"id"`
	Label            string   `json:"label"`
	ContextWindow    int64    `json:"contextWindow,omitempty"`
	DefaultMaxTokens int      `json:"defaultMaxTokens,omitempty"`
	Efforts          []string `json:"efforts,omitempty"`
	DefaultEffort    string   `json:"defaultEffort,omitempty"`
	// Price is the route's price list; nil: not priced.
	Price *Price `json:"price,omitempty"`
}

// Price is what a route charges per million tokens.
type Price struct {
	Input       float64 `json:"input"`
	CachedInput float64 `json:"cachedInput"`
	Output      float64 `json:"output"`
}

// Member is a grant on a session.
type Member struct {
	UserID      string    `json:"userId"`
	Name        string    `json:"name"`
	DisplayName string    `json:"displayName,omitempty"`
	Role        string    `json:"role"` // collaborator | viewer
	CreatedAt   time.Time `json:"createdAt"`
}

// ShareLink is a share link's metadata.
type ShareLink struct {
	ID        string     `json:"id"`
	CreatedBy string     `json:"createdBy"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
}

// NewShareLink is a created link with its token (shown once).
type NewShareLink struct {
	ShareLink
	Token string `json:"token"`
	Path  string `json:"path"`
}
