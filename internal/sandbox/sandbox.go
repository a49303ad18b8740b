package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrUnavailable is returned by Command when no usable sandbox exists and
// the admin did not turn it off: tool processes are refused.
var ErrUnavailable = errors.New("no usable sandbox")

// systemRO are the host paths every sandbox reads (and executes): the
// system, never the server's data or home.
var systemRO = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// Status is what is in force, for the log at start and the Settings page.
type Status struct {
	Mode Mode `json:"mode"` // configured
	// Active: tool processes run (confined, or unconfined when Mode is off).
	Active bool `json:"active"`
	// Confined: tool processes run inside a sandbox.
	Confined bool `json:"confined"`
	// Landlock is the kernel's Landlock ABI (0: none); it is in force when
	// Confined.
	Landlock int `json:"landlock"`
	// Bwrap: bubblewrap namespaces are in force. BwrapVersion is set when
	// bubblewrap is installed; BwrapProblem says why it is not used.
	Bwrap        bool     `json:"bwrap"`
	BwrapVersion string   `json:"bwrapVersion,omitempty"`
	BwrapProblem string   `json:"bwrapProblem,omitempty"`
	UID          int      `json:"uid"`
	GID          int      `json:"gid"`
	Limits       Limits   `json:"limits"`
	ReadOnly     []string `json:"readOnly"`
	// Problem says why tool processes are refused (when not Active).
	Problem string `json:"problem,omitempty"`
	// Cgroups is the mechanism that caps each session's processes
	// together (memory, processes, CPU weight); CgroupProblem says why
	// none is in force (then memory and processes are per-process rlimits).
	Cgroups       CgroupMode `json:"cgroups"`
	CgroupProblem string     `json:"cgroupProblem,omitempty"`
}

// Summary is one line for logs and pages.
func (st Status) Summary() string {
	switch {
	case st.Mode == ModeOff:
		return "off: tool processes run unconfined, as the server's user (HARNESS_SANDBOX=off)"
	case !st.Active:
		return "unavailable: shell tools are refused (" + st.Problem + ")"
	case st.Bwrap:
		return fmt.Sprintf("bubblewrap %s namespaces + Landlock ABI %d, tools run as uid %d", st.BwrapVersion, st.Landlock, st.UID)
	default:
		return fmt.Sprintf("Landlock ABI %d without namespaces, tools run as uid %d", st.Landlock, st.UID)
	}
}

// Sandbox starts confined processes. It is safe for concurrent use.
type Sandbox struct {
	cfg Config
	// ready is closed once the probe decided status, bwrap and exe; they
	// are read only after it.
	ready  chan struct{}
	status Status
	bwrap  string      // bubblewrap binary when namespaces are in force
	exe    string      // the helper: this binary
	caps   *cgroupCaps // nil where cgroups are not in force
}

// New checks the configuration and probes the mechanisms it asks for with
// a confined self-test. In auto mode the probe runs in the background, so
// the server starts without waiting for it; Command and Status wait for its
// verdict (tens of milliseconds). New fails only on an invalid
// configuration or when mode bwrap or landlock was asked for and cannot
// work (those probes run before New returns); in auto mode a missing
// mechanism degrades (bubblewrap) or makes Command refuse (Landlock), as
// Status says and the log tells.
func New(ctx context.Context, log *slog.Logger, cfg Config) (*Sandbox, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Sandbox{cfg: cfg, ready: make(chan struct{}), status: Status{
		Mode: cfg.Mode, UID: cfg.UID, GID: cfg.GID, Limits: cfg.Limits,
		ReadOnly: existing(append(slices.Clone(systemRO), cfg.ReadOnly...)),
	}}
	if cfg.Mode != ModeAuto {
		defer close(s.ready)
		return s, s.probe(ctx, log)
	}
	// The probe outlives New's caller: it must not end with its context.
	go func() {
		defer close(s.ready)
		_ = s.probe(context.WithoutCancel(ctx), log)
	}()
	return s, nil
}

// probe decides what is in force. It returns an error only for an explicit
// mode that cannot work.
func (s *Sandbox) probe(ctx context.Context, log *slog.Logger) error {
	cfg := s.cfg
	if cfg.Mode == ModeOff {
		s.status.Active = true
		s.status.CgroupProblem = "the sandbox is off, and with it the session caps"
		log.Warn("sandbox is OFF: tool processes can reach everything the server can", "sandbox", s.status.Summary())
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		s.status.Problem = "the sandbox helper (this binary) cannot be found: " + err.Error()
		log.Error("sandbox unavailable: shell tools are refused", "reason", s.status.Problem)
		return fmt.Errorf("sandbox helper: %w", err)
	}
	s.exe = exe
	s.status.Landlock = landlockABI()
	if s.status.Landlock < 1 {
		s.status.Problem = "the kernel does not support Landlock; set HARNESS_SANDBOX=off to run tools unconfined"
		if cfg.Mode != ModeAuto {
			return fmt.Errorf("sandbox mode %s: %s", cfg.Mode, s.status.Problem)
		}
		log.Error("sandbox unavailable: shell tools are refused", "reason", s.status.Problem)
		return nil
	}
	if cfg.Mode != ModeLandlock {
		if err := s.tryBwrap(ctx); err != nil {
			s.status.BwrapProblem = err.Error()
			if cfg.Mode == ModeBwrap {
				return fmt.Errorf("sandbox mode bwrap: %w", err)
			}
			log.Warn("bubblewrap is not used: tools get Landlock without namespaces (install bubblewrap for a private /proc, /tmp and network)", "reason", err)
		}
	}
	if !s.status.Bwrap {
		if err := s.selfTest(ctx); err != nil {
			s.status.Problem = "the Landlock self-test failed: " + err.Error()
			if cfg.Mode != ModeAuto {
				return fmt.Errorf("sandbox mode %s: %s", cfg.Mode, s.status.Problem)
			}
			log.Error("sandbox unavailable: shell tools are refused", "reason", s.status.Problem)
			return nil
		}
	}
	s.status.Active, s.status.Confined = true, true
	log.Info("sandbox ready", "sandbox", s.status.Summary())
	s.setupCgroups(log)
	return nil
}

// setupCgroups puts the session caps in force where cgroups can be made;
// elsewhere the log and Status say why, and tools run with rlimits alone.
func (s *Sandbox) setupCgroups(log *slog.Logger) {
	if s.cfg.NoCgroups {
		s.status.CgroupProblem = "turned off in the configuration"
		return
	}
	caps, left, err := newCgroupCaps(s.cfg.CgroupName, s.cfg.Limits)
	if err != nil {
		s.status.CgroupProblem = err.Error()
		log.Warn("cgroups are not used: memory and process limits are per process, not per session", "reason", err)
		return
	}
	if len(left) > 0 {
		log.Warn("stale session cgroups still have processes", "cgroups", left)
	}
	s.caps, s.status.Cgroups = caps, CgroupV1
	log.Info("session caps in force", "cgroups", caps.name, "memory", s.cfg.Limits.MemoryBytes, "processes", s.cfg.Limits.Processes)
}

// OOMKills is how many processes of group the kernel killed because the
// group reached its memory cap (0 without cgroups).
func (s *Sandbox) OOMKills(group string) uint64 {
	<-s.ready
	if s.caps == nil {
		return 0
	}
	return s.caps.oomKills(group)
}

// RemoveGroup removes group's cgroup (a deleted session's); it fails while
// processes of the group still run.
func (s *Sandbox) RemoveGroup(group string) error {
	<-s.ready
	if s.caps == nil {
		return nil
	}
	return s.caps.remove(group)
}

// Close removes the cgroups this sandbox made. Commands must have ended.
func (s *Sandbox) Close() error {
	<-s.ready
	if s.caps == nil {
		return nil
	}
	return s.caps.close()
}

// tryBwrap finds bubblewrap and keeps it when a confined self-test passes.
func (s *Sandbox) tryBwrap(ctx context.Context) error {
	path := s.cfg.BwrapPath
	if path == "" {
		path = "bwrap"
	}
	full, err := exec.LookPath(path)
	if err != nil {
		return fmt.Errorf("bubblewrap is not installed (%v)", err)
	}
	v, err := bwrapVersion(ctx, full)
	if err != nil {
		return err
	}
	s.status.BwrapVersion = v
	s.bwrap, s.status.Bwrap = full, true
	if err := s.selfTest(ctx); err != nil {
		s.bwrap, s.status.Bwrap = "", false
		return fmt.Errorf("bubblewrap %s does not work here: %w", v, err)
	}
	return nil
}

// Status is what is in force (once the probe has decided it).
func (s *Sandbox) Status() Status {
	<-s.ready
	st := s.status
	st.ReadOnly = slices.Clone(st.ReadOnly)
	return st
}

// Known is Status without waiting: ok is false while the start-up probe
// still runs (auto mode), when what will be in force is not known yet.
func (s *Sandbox) Known() (st Status, ok bool) {
	select {
	case <-s.ready:
		return s.Status(), true
	default:
		return Status{}, false
	}
}

// Limits are the configured limits (defaults filled in).
func (s *Sandbox) Limits() Limits { return s.cfg.Limits }

// Identity is the uid and gid tools run as.
func (s *Sandbox) Identity() (uid, gid int) { return s.cfg.UID, s.cfg.GID }

// Own gives a directory the server created for tools (a workspace, a
// scratch directory) to the tools' identity, when the server runs as root
// and that identity is another user. Elsewhere it does nothing.
func (s *Sandbox) Own(dir string) error {
	if os.Geteuid() != 0 || s.cfg.Mode == ModeOff || (s.cfg.UID == 0 && s.cfg.GID == 0) {
		return nil
	}
	if err := os.Lchown(dir, s.cfg.UID, s.cfg.GID); err != nil {
		return fmt.Errorf("give %s to the sandbox user: %w", dir, err)
	}
	return nil
}

// Process is a program to run confined.
type Process struct {
	// Path is the program (absolute, or looked up in the server's PATH);
	// it must lie in a path the sandbox can read (the system).
	Path string
	// Args are the arguments after the program name.
	Args []string
	Env  []string
	// Workspace is the read-write directory (absolute, existing) and the
	// default working directory.
	Workspace string
	// WorkspaceReadOnly mounts the workspace read-only (searches).
	WorkspaceReadOnly bool
	// Dir is the working directory, inside Workspace; empty means Workspace.
	Dir string
	// Scratch is a private directory for temporary files and HOME; inside
	// bubblewrap it is mounted at /tmp. Empty gives an empty /tmp per
	// command under bubblewrap and no writable temporary directory under
	// Landlock alone.
	Scratch string
	// ReadOnly are extra paths this process may read (a clone source).
	ReadOnly []string
	// Egress is the server's egress proxy socket for this process's
	// session (internal/egress): set, the network is on, and the proxy is
	// the only way out of the process's own network namespace; empty, the
	// network is off.
	Egress string
	// UID and GID run the process as another unprivileged user than the
	// configured one (the owner of an existing project directory); 0
	// keeps the configured identity. Only a server running as root can.
	UID, GID int
	// Group names the group (a session id) whose caps the process shares
	// where cgroups are in force; empty: none but the rlimits.
	Group string
	// MaxFileSize lowers RLIMIT_FSIZE below the configured limit for this
	// process (the workspace quota left); 0 keeps the limit.
	MaxFileSize uint64

	// join are the group's cgroup.procs files (set by command).
	join []*os.File
}

// Command builds the command that runs p confined. The caller sets its
// output and starts it; the command is its own process group leader, so
// killing the group ends everything it started (under bubblewrap the PID
// namespace dies with it). It returns ErrUnavailable (wrapped, with the
// reason) when tool processes are refused.
func (s *Sandbox) Command(p Process) (*exec.Cmd, error) {
	<-s.ready
	if !s.status.Active {
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, s.status.Problem)
	}
	return s.command(p)
}

// command is Command without the availability check (the self-test runs
// before the sandbox is declared usable).
func (s *Sandbox) command(p Process) (*exec.Cmd, error) {
	if err := checkProcess(&p); err != nil {
		return nil, err
	}
	if s.cfg.Mode == ModeOff {
		cmd := exec.Command(p.Path, p.Args...)
		cmd.Dir, cmd.Env = p.Dir, p.Env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return cmd, nil
	}
	if p.Group != "" && s.caps != nil {
		g, err := s.caps.procsFiles(p.Group)
		if err != nil {
			return nil, err
		}
		p.join = g.procs
	}
	build := s.landlockCommand
	if s.status.Bwrap {
		build = s.bwrapCommand
	}
	cmd, err := build(p)
	if err != nil {
		return nil, err
	}
	// The helper finds them at fds 3, 4, … (baseSpec's CgroupFDs).
	cmd.ExtraFiles = append(p.join, cmd.ExtraFiles...)
	return cmd, nil
}

// checkProcess resolves the program and checks the paths.
func checkProcess(p *Process) error {
	if p.Workspace == "" || !filepath.IsAbs(p.Workspace) {
		return fmt.Errorf("sandbox: the workspace must be an absolute path (got %q)", p.Workspace)
	}
	p.Workspace = filepath.Clean(p.Workspace)
	if p.Dir == "" {
		p.Dir = p.Workspace
	}
	p.Dir = filepath.Clean(p.Dir)
	if !within(p.Workspace, p.Dir) {
		return fmt.Errorf("sandbox: working directory %s is outside the workspace %s", p.Dir, p.Workspace)
	}
	if p.Egress != "" && !filepath.IsAbs(p.Egress) {
		return fmt.Errorf("sandbox: the egress socket must be an absolute path (got %q)", p.Egress)
	}
	if p.Scratch != "" && !filepath.IsAbs(p.Scratch) {
		return fmt.Errorf("sandbox: the scratch directory must be an absolute path (got %q)", p.Scratch)
	}
	for _, ro := range p.ReadOnly {
		if !filepath.IsAbs(ro) {
			return fmt.Errorf("sandbox: read-only path %q must be absolute", ro)
		}
	}
	if p.UID < 0 || p.GID < 0 || (p.UID == 0) != (p.GID == 0) {
		return fmt.Errorf("sandbox: identity %d:%d: tools never run as root", p.UID, p.GID)
	}
	if !strings.Contains(p.Path, "/") {
		full, err := exec.LookPath(p.Path)
		if err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		p.Path = full
	}
	return nil
}

// landlockCommand runs the helper directly: Landlock and limits, no
// namespaces. /proc is not readable (it would show every process's command
// line); temporary files go to the scratch directory.
func (s *Sandbox) landlockCommand(p Process) (*exec.Cmd, error) {
	spec := s.baseSpec(p)
	spec.RO = append(spec.RO, p.ReadOnly...)
	if p.WorkspaceReadOnly {
		spec.RO = append(spec.RO, p.Workspace)
	} else {
		spec.RW = append(spec.RW, p.Workspace)
	}
	home := p.Dir
	if p.Scratch != "" {
		spec.RW = append(spec.RW, p.Scratch)
		home = p.Scratch
	}
	spec.RWFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}
	spec.ROFiles = []string{"/dev/random", "/dev/urandom"}
	spec.DeathSignal = true
	// A network-on command gets a network namespace of its own (below),
	// whose lo the helper brings up.
	spec.Egress, spec.LoopbackUp = p.Egress, p.Egress != ""
	enc, err := encodeSpec(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("/proc/self/exe", helperArg, enc)
	cmd.Env = withHome(p.Env, home)
	// A user namespace of its own (no other namespace) makes RLIMIT_NPROC
	// count this command's processes only, not every process of the uid
	// (other sessions' or, when not root, the server's own threads).
	uid, gid := s.identity(p)
	if os.Geteuid() != 0 {
		uid, gid = os.Getuid(), os.Getgid()
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true, Pdeathsig: syscall.SIGKILL,
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: idMap(uid), GidMappings: idMap(gid),
		GidMappingsEnableSetgroups: os.Geteuid() == 0,
	}
	if p.Egress != "" {
		// A network namespace of its own, like bubblewrap's: the host's
		// network is out of reach, the proxy is the way out. The helper
		// brings lo up; as another user than root it needs the capability
		// carried across its exec.
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWNET
		if os.Geteuid() != 0 {
			cmd.SysProcAttr.AmbientCaps = []uintptr{unix.CAP_NET_ADMIN}
		}
	}
	return cmd, nil
}

// identity is who runs p.
func (s *Sandbox) identity(p Process) (uid, gid int) {
	if p.UID != 0 && os.Geteuid() == 0 {
		return p.UID, p.GID
	}
	return s.cfg.UID, s.cfg.GID
}

// baseSpec is the part of the helper spec common to both modes.
func (s *Sandbox) baseSpec(p Process) helperSpec {
	uid, gid := s.identity(p)
	spec := helperSpec{
		RO:  slices.Clone(s.status.ReadOnly),
		Dir: p.Dir,
		UID: uid, GID: gid,
		Limits: s.cfg.Limits,
		Path:   p.Path,
		Args:   append([]string{filepath.Base(p.Path)}, p.Args...),
	}
	if p.MaxFileSize > 0 && p.MaxFileSize < spec.Limits.FileSizeBytes {
		spec.Limits.FileSizeBytes = p.MaxFileSize
	}
	for i := range p.join {
		spec.CgroupFDs = append(spec.CgroupFDs, 3+i)
	}
	if len(p.join) > 0 {
		// The group's memory cap counts what is really used; RLIMIT_DATA
		// would count reservations, per process, on top of it.
		spec.Limits.MemoryBytes = 0
	}
	return spec
}

// withHome sets HOME and TMPDIR to the process's private directory.
func withHome(env []string, home string) []string {
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == "HOME" || k == "TMPDIR" {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "HOME="+home, "TMPDIR="+home)
}

// within reports whether p is root or below it (both clean and absolute).
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// existing keeps the paths that exist on this host (/lib32 and friends vary).
func existing(paths []string) []string {
	out := paths[:0]
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// Unavailable is a sandbox that refuses every tool process, with reason as
// its Problem: what New gives on a kernel without Landlock. Tests use it
// to check that nothing degrades silently where that happens.
func Unavailable(reason string) *Sandbox {
	cfg := Config{Mode: ModeAuto}.withDefaults()
	ready := make(chan struct{})
	close(ready)
	return &Sandbox{cfg: cfg, ready: ready, status: Status{
		Mode: cfg.Mode, UID: cfg.UID, GID: cfg.GID, Limits: cfg.Limits,
		ReadOnly: existing(slices.Clone(systemRO)), Problem: reason,
	}}
}
