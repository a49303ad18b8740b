package tools

import (
	"errors"

	"harness/internal/sandbox"
)

// Process is a program a tool runs. The host (Env.Command) confines it to
// the agent's sandbox: the session workspace (read-write unless
// ReadOnlyWorkspace), a private temporary directory, the session's network
// policy and resource limits.
type Process struct {
	// Path is the program, absolute or looked up in PATH.
	Path string
	Args []string
	// Env is the environment (toolEnv); the sandbox sets HOME and TMPDIR.
	Env []string
	// Dir is the working directory inside the workspace; empty is the
	// workspace itself.
	Dir string
	// ReadOnlyWorkspace mounts the workspace read-only (searches).
	ReadOnlyWorkspace bool
}

// Sandbox errors.
const (
	NameSandbox            = "SandboxError"
	CodeSandboxUnavailable = "SANDBOX_UNAVAILABLE"
)

// sandboxError turns a refused sandbox into a coded error the model and
// the user can read; other errors pass through.
func sandboxError(err error) error {
	if errors.Is(err, sandbox.ErrUnavailable) {
		return Errorf(NameSandbox, CodeSandboxUnavailable,
			"tool processes are refused on this server: %v. File tools (read, write, edit, glob, grep) still work; an admin can install a sandbox (see the README) or set HARNESS_SANDBOX=off", err)
	}
	return err
}
