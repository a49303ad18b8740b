package app

import (
	"context"
	"os/exec"

	"harness/internal/driver"
	"harness/internal/mcp"
	"harness/internal/tools"
)

// setupMCP reads the MCP servers' config file (HARNESS_MCP_CONFIG) and
// builds the manager that connects sessions to them; it starts nothing.
func (a *App) setupMCP(getenv func(string) string) error {
	cfg, err := mcp.LoadConfig(a.Config.MCPConfig, getenv)
	if err != nil {
		return err
	}
	a.MCP = mcp.New(cfg, mcp.Options{Log: a.Log, Getenv: getenv})
	for _, s := range cfg.Servers {
		// Target never holds secrets (no headers, env values or URL query).
		a.Log.Info("MCP server configured", "server", s.Name, "transport", s.Transport(), "target", s.Target(), "readOnly", s.ReadOnly)
	}
	return nil
}

// sessionTools is what the driver gets: nothing when no server is
// configured, so sessions pay nothing for the feature.
func (a *App) sessionTools() driver.SessionTools {
	if len(a.MCP.Servers()) == 0 {
		return nil
	}
	return MCPTools{M: a.MCP}
}

// MCPTools adapts an mcp.Manager to the driver's SessionTools.
type MCPTools struct{ M *mcp.Manager }

// Open opens a session's connections; they start on first use.
func (t MCPTools) Open(sessionID, workspace string, confine func(context.Context, tools.Process) (*exec.Cmd, error)) driver.SessionToolSet {
	return t.M.Open(sessionID, workspace, confine)
}
