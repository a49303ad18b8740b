package session

// Workspace event types: log-only facts about a session's workspace that
// the transcript shows (the model does not see them).
const (
	TypeWorkspaceReady  Type = "workspace/ready"  // WorkspaceReady
	TypeWorkspaceFailed Type = "workspace/failed" // WorkspaceFailed
)

// WorkspaceReady records how a session's workspace was prepared: a clone
// (Commit, Branch) or a fork's copy of its parent's workspace (Copied false
// and Note when nothing was copied).
type WorkspaceReady struct {
	Kind   string `json:"kind"` // clone | fork
	Source string `json:"source"`
	Commit string `json:"commit,omitempty"`
	Branch string `json:"branch,omitempty"`
	Files  int    `json:"files"`
	Bytes  int64  `json:"bytes"`
	Copied *bool  `json:"copied,omitempty"`
	Note   string `json:"note,omitempty"`
}

// WorkspaceFailed records that a workspace could not be prepared: a clone
// that failed (the session goes on with an empty workspace), or, with
// Interrupted, a fork's copy the server's stop cut short (logged once by
// the repair at the next start; the session takes no more input).
type WorkspaceFailed struct {
	Kind        string `json:"kind"`
	Source      string `json:"source"`
	Error       string `json:"error"`
	Interrupted bool   `json:"interrupted,omitempty"`
}
