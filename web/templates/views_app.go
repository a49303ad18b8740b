package templates

import (
	"time"

	"harness/internal/render"
	"harness/internal/session"
)

// Nav is what every signed-in page shows around its content: the
// sidebar's recent sessions, the user and the CSRF token for forms and
// script requests.
type Nav struct {
	User     string // display name
	UserName string // login name
	Admin    bool
	CSRF     string
	// Page is the active page (sessions, chat, settings, admin).
	Page string
	// Active is the open session's id.
	Active   string
	Sessions []SessionLink
}

// SessionLink is one session in the sidebar.
type SessionLink struct {
	ID     string
	Title  string
	Status string // idle | running
}

// SessionsView fills the session list page.
type SessionsView struct {
	Nav
	Q        string
	Archived bool
	Rows     []SessionRowView
	// Next is the cursor of the next page ("" on the last).
	Next string
	// Flash is a one-line message after an action.
	Flash string
	// Models for the new-session form.
	Models []ModelOption
	Mode   string
	// Workspaces are the new-session form's workspace options.
	Workspaces WorkspaceChoices
}

// WorkspaceChoices are where a new session may work besides a fresh
// directory.
type WorkspaceChoices struct {
	// Dirs are existing directories under the roots the user may use.
	Dirs []DirOption
	// CanClone: git clones run (the sandbox is usable).
	CanClone bool
	// Refused says why tool processes are refused, when they are.
	Refused string
}

// DirOption is one existing directory.
type DirOption struct {
	Path  string
	Label string
}

// SessionRowView is one row of the session list.
type SessionRowView struct {
	ID        string
	Title     string
	Model     string
	Status    string
	Role      string
	Archived  bool
	Updated   time.Time
	CanManage bool
	Shared    bool // the viewer is not the owner
}

// ModelOption is one choice of the model picker.
type ModelOption struct {
	Value    string // provider/model
	Label    string
	Selected bool
	Offline  bool
}

// ChatView fills the chat page and the read-only viewer.
type ChatView struct {
	// Nav is nil on a share-link page (no account).
	Nav *Nav
	// AttachmentMax is the size cap of one image (the composer refuses a
	// larger one before uploading it).
	AttachmentMax int64
	// ShareToken is set on a share-link page: the socket authenticates
	// with it.
	ShareToken string

	ID         string
	Title      string
	ModelLabel string
	Offline    bool
	Mode       string
	Status     string
	Role       string
	CanWrite   bool
	CanManage  bool
	Archived   bool
	Models     []ModelOption
	// Effort is the header's reasoning-effort control.
	Effort EffortView

	Items []render.Item
	// Before is the seq the next older history page ends before; HasMore
	// says whether there is one.
	Before  int64
	HasMore bool
	// Head is the last seq rendered: the socket resumes after it.
	Head int64

	Todos        []session.Todo
	Queue        QueueView
	Interactions []InteractionView

	// ContextUsed and ContextWindow fill the context meter's first paint
	// (the session summary's Context, from compact.Meter); the socket's
	// subscribe answer refreshes it.
	ContextUsed   int64
	ContextWindow int64
	// Figures are the session footer's totals as of Head (the turns that
	// ended); live fragments replace them at each turn end.
	Figures render.SessionFigures
	// HistoryURL is where older pages are fetched.
	HistoryURL string

	// Workspace is where the session's tools work (not shown on share
	// pages); Network says its tools may use the network.
	Workspace WorkspaceView
	Network   bool
	// ToolsRefused says why shell tools are refused on this server.
	ToolsRefused string
}

// WorkspaceView is a session's workspace in the chat header.
type WorkspaceView struct {
	Kind   string // fresh | dir | clone | fork
	Path   string
	Source string
	State  string // "" | preparing | failed
}

// HistoryView is one older page of a transcript (a fragment).
type HistoryView struct {
	Items   []render.Item
	Before  int64
	HasMore bool
}

// SharingView fills a session's sharing page.
type SharingView struct {
	Nav
	ID      string
	Title   string
	Members []MemberView
	Links   []LinkView
	// NewLink is the URL of a link just created (shown once).
	NewLink string
	Error   string
}

// MemberView is one member of a session.
type MemberView struct {
	Name string
	Role string
}

// LinkView is one share link.
type LinkView struct {
	ID      string
	Created time.Time
	State   string // active | revoked | expired
}

// ConfirmView is a confirmation page for a destructive action.
type ConfirmView struct {
	Nav
	Title   string
	Message string
	Action  string // form action URL
	Button  string
	Back    string
}

// SettingsView fills the settings page.
type SettingsView struct {
	Nav
	Flash string
	Error string
	// The user's preferences.
	Models []ModelOption
	Mode   string
	// Admin part.
	Routes        []RouteView
	DefaultModels []ModelOption
	// Sandbox is what confines tools (everyone sees it) and, for admins,
	// the workspace roots, clone hosts and network switches.
	Sandbox SandboxView
	// MCP are the configured MCP servers (admins only; docs/mcp.md).
	MCP MCPView
}

// MCPView is the MCP part of Settings.
type MCPView struct {
	Servers []MCPServerView
	// Editable: servers can be added here (Settings keeps them).
	Editable bool
}

// MCPServerView is one configured MCP server in Settings: where it runs
// (never a header or env value), its live sessions' connections and the
// tools it offers.
type MCPServerView struct {
	Name      string
	Transport string
	Target    string
	ReadOnly  bool
	Timeout   string
	Sessions  []MCPSessionView
	Tools     []MCPToolView
	Skipped   []string
	// FromFile: configured in HARNESS_MCP_CONFIG (read-only here).
	FromFile bool
	// Form is the edit form of a server added in Settings.
	Form *MCPFormView
	// Error says why a stored server is not in use.
	Error string
}

// MCPFormView is the add or edit form of a server kept in Settings. Env
// and Headers list the stored names with empty values: values are
// write-only.
type MCPFormView struct {
	Name, Transport, Command, Args, Env, EnvAllow, ReadOnlyPaths string
	URL, Headers                                                 string
	// StoredURL is the stored URL without user info, query or fragment
	// (an empty URL field keeps the stored URL).
	StoredURL             string
	ReadOnly              bool
	Timeout, StartTimeout string
}

// MCPSessionView is one live session's connection to a server.
type MCPSessionView struct {
	Session string
	State   string
	Error   string
}

// MCPToolView is one tool a server offers, as the model sees it.
type MCPToolView struct {
	Name        string
	Description string
}

// SandboxView is the sandbox and workspace part of Settings.
type SandboxView struct {
	Summary  string
	Active   bool
	Confined bool
	Landlock int
	Bwrap    bool
	// BwrapVersion is set when bubblewrap is installed; BwrapProblem says
	// why it is not used.
	BwrapVersion string
	BwrapProblem string
	Identity     string // uid:gid tools run as
	Limits       string
	// Caps says what caps a session's processes together (cgroups, or
	// why not); Disk the workspace quota and its mechanism.
	Caps     string
	Disk     string
	ReadOnly string
	Problem  string
	Roots    []RootView
	// GitHosts are the hosts allowed in Settings (one per line);
	// ConfigGitHosts those from HARNESS_GIT_HOSTS.
	GitHosts       string
	ConfigGitHosts []string
	RouteNetwork   []RouteNetworkView
	// FetchHosts is web_fetch's allow-list set in Settings (one per line);
	// ConfigFetchHosts the entries from HARNESS_FETCH_HOSTS.
	FetchHosts       string
	ConfigFetchHosts []string
	ForkCopyMax      string
}

// RootView is one workspace root.
type RootView struct {
	Path     string
	Users    string // comma-separated, "" = everyone
	Shared   bool
	Editable bool // added in Settings (the others come from the configuration)
}

// RouteNetworkView is one model route's network switch.
type RouteNetworkView struct {
	Name  string
	Label string
	On    bool
}

// RouteView is one model route in settings.
type RouteView struct {
	Name         string
	Label        string
	Kind         string
	BaseURL      string
	KeySet       bool
	DefaultModel string
	Models       string
	Enabled      bool
	// Editable: an admin-configured route (the others come from the
	// environment or are the offline demo).
	Editable bool
	Offline  bool
	// A stored route's prices per million tokens and context window, as
	// the form shows them ("" when unset).
	InputPrice, CachedInputPrice, OutputPrice string
	ContextWindow                             string
	// ImageInput: the route takes images.
	ImageInput bool
}

// AdminUsersView fills the user management page.
type AdminUsersView struct {
	Nav
	Flash string
	Error string
	Users []UserView
}

// UserView is one account.
type UserView struct {
	Name        string
	DisplayName string
	Role        string
	Disabled    bool
	HasPassword bool
	Created     time.Time
	Self        bool
}

// QueueView is what waits for the agent (the live queue): next-step
// messages, then next-turn prompts.
type QueueView struct {
	Steering []QueueItem
	Queued   []QueueItem
}

// QueueItem is one waiting message.
type QueueItem struct {
	ID   string
	Text string
	// Images counts the message's images.
	Images int
}

// InteractionView is a pending approval or, when Question is set, a
// question for the user.
type InteractionView struct {
	ID       string
	Question bool
	// An approval's call.
	ToolName  string
	Arguments string
	Reason    string
	Preview   *session.ApprovalPreview
	// A question's questions.
	Questions []session.Question
}
