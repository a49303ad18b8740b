package app

import (
	"context"
	"fmt"
	"net"
)

// Start runs the start-up checks in order: on PostgreSQL, register this
// replica (its identity: nothing touches a session before it); with no
// users, create the first admin from HARNESS_ADMIN_PASSWORD or log a
// one-time setup link; refuse a non-loopback bind unless a user with a
// password exists; then remove what a crash left of imports
// (service.RepairImports), find workspaces stored with a relative path again,
// restart interrupted clones and resume sessions with queued input (on
// PostgreSQL only those whose lease this replica can take).
//
// A server calls it once it holds its listener (Listen), so that a start
// that cannot bind writes nothing.
func (a *App) Start(ctx context.Context) error {
	if err := a.register(ctx); err != nil {
		return err
	}
	path, err := a.Auth.Bootstrap(ctx, a.Config.AdminPassword)
	if err != nil {
		return err
	}
	if path != "" {
		// The link is a one-time secret meant for whoever reads this log.
		a.Log.Warn("no users yet: open this one-time link to create the first admin, or set HARNESS_ADMIN_PASSWORD",
			"url", setupURL(a.Config.Addr, path))
	}
	if err := a.Auth.CheckExposure(ctx, a.Config.Loopback()); err != nil {
		return fmt.Errorf("listen on %s: %w; create one with `user add NAME --admin` or set HARNESS_ADMIN_PASSWORD, or bind 127.0.0.1", a.Config.Addr, err)
	}
	// Before anything serves or loads a session: what a crash left of an
	// import goes.
	if err := a.Service.RepairImports(ctx); err != nil {
		a.Log.Error("repair interrupted imports", "err", err)
	}
	if err := a.Service.ResumeWorkspaces(ctx); err != nil {
		a.Log.Error("resume workspaces", "err", err)
	}
	if err := a.Manager.Resume(ctx); err != nil {
		a.Log.Error("resume sessions with queued input", "err", err)
	}
	if a.Replica != nil {
		a.Replica.Start()
	}
	return nil
}

// setupURL is the setup link as a browser on this machine opens it.
func setupURL(addr, path string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return path
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + path
}
