package builtin

import (
	"errors"

	"harness/internal/sandbox"
	"harness/internal/tools"
)

// Sandbox errors.
const (
	NameSandbox            = "SandboxError"
	CodeSandboxUnavailable = "SANDBOX_UNAVAILABLE"
)

// sandboxError turns a refused sandbox into a coded error the model and
// the user can read; other errors pass through.
func sandboxError(err error) error {
	if errors.Is(err, sandbox.ErrUnavailable) {
		return tools.Errorf(NameSandbox, CodeSandboxUnavailable,
			"tool processes are refused on this server: %v. File tools (read, write, edit, glob, grep) still work; an admin can install a sandbox (see the README) or set HARNESS_SANDBOX=off", err)
	}
	return err
}
