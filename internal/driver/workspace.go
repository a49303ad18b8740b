package driver

import (
	"context"
	"errors"

	"harness/internal/session"
	"harness/internal/tools"
)

// Tool error of a call refused because the session's workspace cannot be
// used (Options.WorkspaceGate).
const (
	NameWorkspaceNotReady = "WorkspaceNotReadyError"
	CodeWorkspaceNotReady = "WORKSPACE_NOT_READY"
)

// workspaceGate returns an execute hook that refuses every tool body of
// the step when the workspace cannot be used, nil when it can. A subagent
// asks for its parent's workspace (its sandbox).
func (a *Agent) workspaceGate(ctx context.Context) tools.ExecuteHook {
	g := a.m.opts.WorkspaceGate
	if g == nil {
		return nil
	}
	reason := g(ctx, a.sandbox)
	if reason == "" {
		return nil
	}
	return func(context.Context, *tools.Call, func(context.Context) (tools.Result, error)) (tools.Result, error) {
		return tools.Result{}, tools.Errorf(NameWorkspaceNotReady, CodeWorkspaceNotReady, "%s", reason)
	}
}

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

// ErrWorkspaceSettled: the session's own log already has its workspace's
// outcome. A workspace settles once: two repairs racing (a start's and a
// takeover's) log one outcome between them.
var ErrWorkspaceSettled = errors.New("the workspace's outcome is logged already")

// NoteWorkspace logs the workspace's outcome (workspace/ready or
// workspace/failed) unless one is logged already (ErrWorkspaceSettled),
// and waits until it is durable.
func (a *Agent) NoteWorkspace(ctx context.Context, t session.Type, data any) error {
	a.mu.Lock()
	if a.workspaceSettledLocked() {
		a.mu.Unlock()
		return ErrWorkspaceSettled
	}
	_, err := a.appendLocked(t, data)
	a.mu.Unlock()
	if err != nil {
		return err
	}
	return a.durable(ctx)
}

// workspaceSettledLocked reports whether the session's own log (not its
// seed: a fork's seed holds its parent's outcome) has a workspace outcome.
func (a *Agent) workspaceSettledLocked() bool {
	for _, ev := range a.log.Events(a.log.Header().SeedLength, a.log.Len()) {
		if ev.Type == session.TypeWorkspaceReady || ev.Type == session.TypeWorkspaceFailed {
			return true
		}
	}
	return false
}

// PublishWorkspace tells viewers how the workspace's preparation goes.
func (a *Agent) PublishWorkspace(p WorkspaceProgress) {
	a.m.live.publish(LiveEvent{Kind: LiveWorkspace, Session: a.id, Workspace: &p})
}

// NoteNetwork logs a connection the session's egress proxy refused
// (network/refused). It may come at any time the session is loaded, during
// a turn too (the tool that asked is running); it does not wait for the
// write to be durable: a note lost in a crash is only a note.
func (a *Agent) NoteNetwork(ev session.NetworkRefused) error {
	_, err := a.log.Append(session.TypeNetworkRefused, ev)
	return err
}
