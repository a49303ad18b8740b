package driver

import (
	"context"
	"os/exec"

	"harness/internal/tools"
)

// SessionTools supplies tools of a session's own beyond the registry's:
// the MCP servers' (internal/mcp, wired by app).
type SessionTools interface {
	// Open is called when an agent is built; it must start nothing.
	// confine builds the commands the set's processes run in, in the
	// session's sandbox.
	Open(sessionID, workspace string, confine func(context.Context, tools.Process) (*exec.Cmd, error)) SessionToolSet
}

// SessionToolSet is one session's own tools.
type SessionToolSet interface {
	// Tools returns the current definitions and a version that changes
	// exactly when they do. It is asked at every step's assembly and may
	// connect on its first call; the same version must mean the same
	// definitions, so the request header (and the prompt cache) stays.
	Tools(ctx context.Context) ([]tools.Definition, uint64)
	// Close stops whatever the set started; the agent is unloading.
	Close()
}

// sessionTools is an agent's set and what of it is registered on the
// agent's scope. Only the driver goroutine (assemble) reads and writes it;
// close may run from another goroutine once the agent left the manager.
type sessionTools struct {
	set     SessionToolSet
	version uint64
	synced  bool
	names   []string
}

// openSessionTools opens the agent's set when the manager has a source.
func (m *Manager) openSessionTools(a *Agent) {
	if m.opts.SessionTools == nil {
		return
	}
	env := &toolEnv{a: a}
	a.own.set = m.opts.SessionTools.Open(a.id, a.workspace, env.Command)
}

// syncSessionTools registers the set's current tools on the scope when
// their version changed (a scoped tool shadows a global of the same name).
// A definition the registry refuses (a schema it cannot compile) is left
// out and logged; the others are offered.
func (a *Agent) syncSessionTools(ctx context.Context) {
	own := &a.own
	if own.set == nil {
		return
	}
	defs, version := own.set.Tools(ctx)
	if own.synced && version == own.version {
		return
	}
	for _, n := range own.names {
		a.scope.Unregister(n)
	}
	own.names = own.names[:0]
	for _, d := range defs {
		if err := a.scope.Register(d); err != nil {
			a.logger.Warn("session tool left out", "tool", d.Name, "err", err)
			continue
		}
		own.names = append(own.names, d.Name)
	}
	own.version, own.synced = version, true
}

// closeSessionTools stops the agent's set (it unloaded, was removed or
// lost its lease).
func (a *Agent) closeSessionTools() {
	if a.own.set != nil {
		a.own.set.Close()
	}
}
