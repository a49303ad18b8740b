package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"

	"harness/internal/sandbox"
	"harness/internal/workspace"
)

// setupWorkspaces probes the sandbox (unless given one) and builds the
// workspace manager: roots
// and clone hosts come from the configuration and from Settings, the
// network policy from the session and its model route.
func (a *App) setupWorkspaces(ctx context.Context, sb *sandbox.Sandbox) error {
	if sb == nil {
		cfg := a.Config.Sandbox
		if cfg.CgroupName == "" {
			cfg.CgroupName = cgroupName(a.Config.DataDir)
		}
		var err error
		if sb, err = sandbox.New(ctx, a.Log, cfg); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		a.ownSandbox = true
	}
	a.Sandbox = sb
	var private []string
	if a.Config.DBDriver == "sqlite" && a.Config.DBDSN != "" {
		db, err := filepath.Abs(a.Config.DBDSN)
		if err != nil {
			return fmt.Errorf("database path: %w", err)
		}
		private = append(private, db)
	}
	proxy, err := a.setupEgress()
	if err != nil {
		return err
	}
	a.Egress = proxy
	ws, err := workspace.New(workspace.Deps{
		Log: a.Log, Sandbox: sb, DataDir: a.Config.DataDir, PrivateFiles: private, Egress: proxy,
		Roots: a.workspaceRoots, GitHosts: a.gitHosts,
		InUse:       a.Store.WorkspaceInUse,
		Network:     a.sessionNetwork,
		FetchHosts:  a.fetchHosts,
		ForkCopyMax: a.Config.ForkCopyMax,
	})
	if err != nil {
		return err
	}
	a.Workspaces = ws
	return nil
}

// cgroupName names the server's parent cgroup after its data directory:
// a restart finds (and removes) what the last run left, and two servers
// with their own data directories never remove each other's.
func cgroupName(dataDir string) string {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		abs = dataDir
	}
	sum := sha256.Sum256([]byte(abs))
	return "harness-" + hex.EncodeToString(sum[:6])
}

// workspaceRoots are the configured roots, then those added in Settings.
func (a *App) workspaceRoots(ctx context.Context) ([]workspace.Root, error) {
	var out []workspace.Root
	for _, r := range a.Config.WorkspaceRoots {
		out = append(out, workspace.Root{Path: r.Path, Users: r.Users, Shared: r.Shared, Source: "config"})
	}
	stored, err := a.Settings.WorkspaceRoots(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range stored {
		out = append(out, workspace.Root{Path: r.Path, Users: r.Users, Shared: r.Shared, Source: "settings"})
	}
	return out, nil
}

// gitHosts are the configured clone hosts, then those added in Settings.
func (a *App) gitHosts(ctx context.Context) ([]string, error) {
	stored, err := a.Settings.GitHosts(ctx)
	if err != nil {
		return nil, err
	}
	return append(slices.Clone(a.Config.GitHosts), stored...), nil
}

// sessionNetwork reports whether a session's tools may use the network: an
// admin allowed it for the session, or for the model route it now uses.
// Errors read as "no": the network stays off unless something says on.
func (a *App) sessionNetwork(ctx context.Context, id string) bool {
	row, err := a.Store.GetSession(ctx, id)
	if err != nil {
		return false
	}
	if row.Network {
		return true
	}
	provider := row.Provider
	if ag, ok := a.Manager.Lookup(id); ok {
		if sel := ag.Log().State().Model; sel != nil {
			provider = sel.Provider
		}
	}
	routes, err := a.Settings.RouteNetwork(ctx)
	return err == nil && routes[provider]
}
