package tools

// Process is a program a tool runs. The host (Env.Command) confines it to
// the agent's sandbox: the session workspace (read-write unless
// ReadOnlyWorkspace), a private temporary directory, the session's network
// policy and resource limits.
type Process struct {
	// Path is the program, absolute or looked up in PATH.
	Path string
	Args []string
	// Env is the whole environment (the tool builds it); the sandbox sets
	// HOME and TMPDIR.
	Env []string
	// Dir is the working directory inside the workspace; empty is the
	// workspace itself.
	Dir string
	// ReadOnlyWorkspace mounts the workspace read-only (searches).
	ReadOnlyWorkspace bool
	// ReadOnly are extra absolute host paths the process may read and
	// execute besides the system (an admin-configured MCP server's
	// installation).
	ReadOnly []string
}
