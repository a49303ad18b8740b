// Package workspace owns where session workspaces live and how tool
// processes reach them: fresh directories under the data directory, existing
// directories under admin-configured roots, sandboxed git clones and fork
// copies; each session's private scratch directory; and the confinement of
// every tool process (internal/sandbox) with the session's identity and
// network policy. It knows sessions only by id.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"harness/internal/sandbox"
	"harness/internal/tools"
)

// Kind is where a session's workspace came from.
type Kind string

const (
	KindFresh Kind = "fresh" // an empty directory under the data directory
	KindDir   Kind = "dir"   // an existing directory under a workspace root
	KindClone Kind = "clone" // a git clone into a fresh directory
	KindFork  Kind = "fork"  // a copy of the parent's workspace
	// KindSubagent is a subagent's: its parent's workspace itself.
	KindSubagent Kind = "subagent"
)

// Managed reports whether the session owns its directory (and removes it
// with the session): an existing directory under a root is never removed,
// nor the parent's workspace a subagent works in.
func (k Kind) Managed() bool { return k != KindDir && k != KindSubagent }

// Deps are the manager's dependencies.
type Deps struct {
	Log     *slog.Logger
	Sandbox *sandbox.Sandbox
	// DataDir is the server's (absolute) data directory: fresh workspaces
	// and scratch directories live under it, and no workspace may contain
	// it or lie inside it otherwise.
	DataDir string
	// PrivateFiles are files outside the data directory that no workspace
	// may contain either: the SQLite database when HARNESS_DB_DSN puts it
	// elsewhere. The file tools run in the server's process, and a
	// descriptor of the database closed there would drop SQLite's locks
	// on it (besides exposing every session).
	PrivateFiles []string
	// Roots lists the workspace roots (configuration and Settings).
	Roots func(ctx context.Context) ([]Root, error)
	// GitHosts lists the hosts clones may use over the network.
	GitHosts func(ctx context.Context) ([]string, error)
	// InUse reports whether a session other than except uses dir.
	InUse func(ctx context.Context, dir, except string) (bool, error)
	// Network reports whether a session's tools may use the network.
	Network func(ctx context.Context, sessionID string) bool
	// Egress opens a session's proxy socket, the network-on sandbox's only
	// way out (internal/egress); nil refuses network-on commands.
	Egress Egress
	// FetchHosts lists the hosts web_fetch may reach at loopback, private
	// and link-local addresses (configuration, then Settings).
	FetchHosts func(ctx context.Context) ([]string, error)
	// ForkCopyMax caps the bytes a fork copies (0: forks never copy).
	ForkCopyMax int64
}

// Egress hands out a session's egress proxy socket; extra are hosts that
// socket also allows at non-public addresses (a clone's git host).
type Egress interface {
	Socket(ctx context.Context, sessionID string, extra []string) (string, error)
}

// Manager is safe for concurrent use.
type Manager struct {
	d       Deps
	fresh   string // <data>/workspaces
	scratch string // <data>/scratch
	meter   *meter // each session's disk use
	disk    DiskStatus
}

// New prepares the directories the manager owns.
func New(d Deps) (*Manager, error) {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Sandbox == nil {
		return nil, errors.New("workspace: a sandbox is required")
	}
	if !filepath.IsAbs(d.DataDir) {
		return nil, fmt.Errorf("workspace: the data directory must be absolute (got %q)", d.DataDir)
	}
	if d.Roots == nil {
		d.Roots = func(context.Context) ([]Root, error) { return nil, nil }
	}
	if d.GitHosts == nil {
		d.GitHosts = func(context.Context) ([]string, error) { return nil, nil }
	}
	if d.InUse == nil {
		d.InUse = func(context.Context, string, string) (bool, error) { return false, nil }
	}
	if d.Network == nil {
		d.Network = func(context.Context, string) bool { return false }
	}
	if d.FetchHosts == nil {
		d.FetchHosts = func(context.Context) ([]string, error) { return nil, nil }
	}
	m := &Manager{d: d, fresh: filepath.Join(d.DataDir, "workspaces"), scratch: filepath.Join(d.DataDir, "scratch"), meter: newMeter()}
	// Both parents are traversable but not listable: a session's own
	// directories are reached by their paths (bind mounts under
	// bubblewrap, plain paths under Landlock alone); nobody lists the
	// others.
	for _, dir := range []string{m.fresh, m.scratch} {
		if err := os.MkdirAll(dir, 0o711); err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		if err := os.Chmod(dir, 0o711); err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
	}
	m.disk = diskStatus(m.quota(), m.fresh)
	d.Log.Info("workspace quota", "quota", sizeText(m.disk.QuotaBytes), "mechanism", m.disk.Mechanism, "why", m.disk.Why)
	return m, nil
}

// Disk is the workspace quota and what enforces it.
func (m *Manager) Disk() DiskStatus { return m.disk }

// Sandbox is the sandbox in use.
func (m *Manager) Sandbox() *sandbox.Sandbox { return m.d.Sandbox }

// FreshRoot is the directory holding fresh workspaces.
func (m *Manager) FreshRoot() string { return m.fresh }

// ForkCopyMax is the fork copy cap in bytes.
func (m *Manager) ForkCopyMax() int64 { return m.d.ForkCopyMax }

// sessionIDPattern keeps session ids safe as path components.
var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

func checkID(id string) error {
	if !sessionIDPattern.MatchString(id) {
		return fmt.Errorf("workspace: invalid session id %q", id)
	}
	return nil
}

// FreshDir is where session id's fresh (or cloned, or forked) workspace
// lives.
func (m *Manager) FreshDir(id string) (string, error) {
	if err := checkID(id); err != nil {
		return "", err
	}
	return filepath.Join(m.fresh, id), nil
}

// CreateFresh makes session id's empty workspace, owned by the tools' user.
func (m *Manager) CreateFresh(id string) (string, error) {
	dir, err := m.FreshDir(id)
	if err != nil {
		return "", err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("create workspace: %w", err)
	}
	if err := m.d.Sandbox.Own(dir); err != nil {
		_ = os.Remove(dir)
		return "", err
	}
	return dir, nil
}

// Remove deletes what Harness made for session id: its scratch directory,
// its cgroup, and its workspace when Harness created it (a directory under
// the fresh root). An existing directory opened from a root is left alone.
func (m *Manager) Remove(id, workspace string) error {
	if err := checkID(id); err != nil {
		return err
	}
	m.meter.forget(id)
	var errs []error
	if err := m.d.Sandbox.RemoveGroup(id); err != nil {
		errs = append(errs, fmt.Errorf("remove cgroup: %w", err))
	}
	if err := os.RemoveAll(filepath.Join(m.scratch, id)); err != nil {
		errs = append(errs, fmt.Errorf("remove scratch: %w", err))
	}
	if workspace != "" && filepath.Dir(filepath.Clean(workspace)) == m.fresh {
		if err := os.RemoveAll(workspace); err != nil {
			errs = append(errs, fmt.Errorf("remove workspace: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Relocate maps a stored workspace path to this server's data directory: a
// fresh workspace recorded with a relative or old data directory
// ("data/workspaces/<id>") is found again under the current one. Other paths
// are returned unchanged.
func (m *Manager) Relocate(id, stored string) string {
	if stored == "" || filepath.IsAbs(stored) {
		return stored
	}
	if filepath.Base(stored) == id && filepath.Base(filepath.Dir(stored)) == "workspaces" {
		if dir, err := m.FreshDir(id); err == nil {
			return dir
		}
	}
	return stored
}

// identity is who tools run as in dir: its owner when that is a user other
// than root (an existing project), else the sandbox's configured user.
func identity(dir string) (uid, gid int) {
	fi, err := os.Stat(dir)
	if err != nil {
		return 0, 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid == 0 {
		return 0, 0
	}
	return int(st.Uid), int(st.Gid)
}

// scratchDir makes session id's private temporary directory (its /tmp and
// HOME), owned by uid:gid.
func (m *Manager) scratchDir(id string, uid, gid int) (string, error) {
	if err := checkID(id); err != nil {
		return "", err
	}
	dir := filepath.Join(m.scratch, id)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("scratch directory: %w", err)
	}
	if os.Geteuid() == 0 {
		if uid == 0 {
			uid, gid = m.d.Sandbox.Identity()
		}
		if err := os.Lchown(dir, uid, gid); err != nil {
			return "", fmt.Errorf("scratch directory: %w", err)
		}
	}
	return dir, nil
}

// Network reports whether session sessionID's tools may use the network
// (its processes, and web_fetch in the server).
func (m *Manager) Network(ctx context.Context, sessionID string) bool {
	return m.d.Network(ctx, sessionID)
}

// Command confines a tool process of session sessionID to its workspace,
// scratch directory, identity and network policy, in the session's cgroup
// (its caps), unable to write a file past the quota left. It implements
// the driver's Confiner.
func (m *Manager) Command(ctx context.Context, sessionID, workspace string, p tools.Process) (*exec.Cmd, error) {
	uid, gid := identity(workspace)
	if uid != 0 && gid == 0 {
		_, gid = m.d.Sandbox.Identity() // never the root group
	}
	scratch, err := m.scratchDir(sessionID, uid, gid)
	if err != nil {
		return nil, err
	}
	egress := ""
	if m.d.Network(ctx, sessionID) {
		if egress, err = m.egressSocket(ctx, sessionID, nil); err != nil {
			return nil, err
		}
	}
	return m.d.Sandbox.Command(sandbox.Process{
		Path: p.Path, Args: p.Args, Env: p.Env, Dir: p.Dir,
		Workspace: workspace, WorkspaceReadOnly: p.ReadOnlyWorkspace,
		ReadOnly: p.ReadOnly,
		Scratch:  scratch, Egress: egress,
		UID: uid, GID: gid,
		Group: sessionID, MaxFileSize: m.fileSizeCap(sessionID),
	})
}

// egressSocket is session id's proxy socket: the network through the
// egress policy.
func (m *Manager) egressSocket(ctx context.Context, id string, extra []string) (string, error) {
	if m.d.Egress == nil {
		return "", errors.New("workspace: the network is on but no egress proxy runs")
	}
	sock, err := m.d.Egress.Socket(ctx, id, extra)
	if err != nil {
		return "", fmt.Errorf("workspace: the network: %w", err)
	}
	return sock, nil
}

// within reports whether p is root or below it (both clean and absolute).
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}
