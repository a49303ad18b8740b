package testkit

import (
	"context"
	"os/exec"

	"harness/internal/sandbox"
	"harness/internal/tools"
)

// plainConfiner confines every session to its workspace with the sandbox's
// configured user, no scratch directory and the network off (Stack's
// Plain option).
type plainConfiner struct{ sandbox *sandbox.Sandbox }

// Command builds the confined command.
func (p plainConfiner) Command(_ context.Context, _, workspace string, proc tools.Process) (*exec.Cmd, error) {
	return p.sandbox.Command(sandbox.Process{
		Path: proc.Path, Args: proc.Args, Env: proc.Env, Dir: proc.Dir,
		Workspace: workspace, WorkspaceReadOnly: proc.ReadOnlyWorkspace,
		ReadOnly: proc.ReadOnly,
	})
}
