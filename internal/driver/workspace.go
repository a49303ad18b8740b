package driver

import (
	"context"

	"harness/internal/session"
)

// WorkspaceProgress is a live step of a session's workspace being prepared
// (a clone), or its end (Done; Failed with the reason).
type WorkspaceProgress struct {
	Kind    string `json:"kind"`              // clone
	Source  string `json:"source"`            // what is cloned
	Phase   string `json:"phase,omitempty"`   // git's phase ("Receiving objects")
	Percent int    `json:"percent,omitempty"` // of the phase, -1 unknown
	Line    string `json:"line,omitempty"`    // git's last progress line
	Done    bool   `json:"done,omitempty"`
	Failed  string `json:"failed,omitempty"`
}

// NoteWorkspace logs a workspace fact (workspace/ready or workspace/failed)
// and waits until it is durable.
func (a *Agent) NoteWorkspace(ctx context.Context, t session.Type, data any) error {
	if _, err := a.log.Append(t, data); err != nil {
		return err
	}
	return a.durable(ctx)
}

// PublishWorkspace tells viewers how the workspace's preparation goes.
func (a *Agent) PublishWorkspace(p WorkspaceProgress) {
	a.m.live.publish(LiveEvent{Kind: LiveWorkspace, Session: a.id, Workspace: &p})
}
