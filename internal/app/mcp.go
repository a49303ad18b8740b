package app

import (
	"context"
	"os/exec"

	"harness/internal/driver"
	"harness/internal/mcp"
	"harness/internal/replica"
	"harness/internal/tools"
)

// setupMCP reads the MCP servers' config file (HARNESS_MCP_CONFIG) and
// those an admin added in Settings, and builds the manager that connects
// sessions to them; it starts nothing.
func (a *App) setupMCP(ctx context.Context, getenv func(string) string) error {
	cfg, err := mcp.LoadConfig(a.Config.MCPConfig, getenv)
	if err != nil {
		return err
	}
	a.MCP = mcp.New(cfg, mcp.Options{Log: a.Log, Getenv: getenv, Store: a.Settings, OnChange: a.settingsChanged(replica.SettingsMCP),
		Images: resultImages{a}})
	if err := a.MCP.Load(ctx); err != nil {
		return err
	}
	for _, s := range a.MCP.Servers() {
		// Target never holds secrets (no headers, env values or URL query).
		a.Log.Info("MCP server configured", "server", s.Name, "origin", s.Origin, "transport", s.Transport(), "target", s.Target(), "readOnly", s.ReadOnly)
	}
	return nil
}

// sessionTools is what the driver gets. A session's set costs nothing
// while no server is configured, and follows servers added in Settings
// later.
func (a *App) sessionTools() driver.SessionTools {
	return MCPTools{M: a.MCP}
}

// resultImages stores the images of MCP results through the service, which
// exists only once the manager it needs was built.
type resultImages struct{ a *App }

func (r resultImages) StoreResultImage(ctx context.Context, sessionID string, data []byte) (tools.MetaImage, error) {
	return r.a.Service.StoreResultImage(ctx, sessionID, data)
}

// MCPTools adapts an mcp.Manager to the driver's SessionTools.
type MCPTools struct{ M *mcp.Manager }

// Open opens a session's connections; they start on first use.
func (t MCPTools) Open(sessionID, workspace string, confine func(context.Context, tools.Process) (*exec.Cmd, error)) driver.SessionToolSet {
	return t.M.Open(sessionID, workspace, confine)
}
