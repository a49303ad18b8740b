package sandbox

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// helperArg marks a re-execution of the binary as the sandbox helper:
// argv is [exe, helperArg, base64(JSON helperSpec)].
const helperArg = "__harness-sandbox-exec"

// helperExit is the helper's exit status when it cannot set up the sandbox
// or exec the program (127 is the shell's "command not found").
const (
	exitSetup = 126
	exitExec  = 127
)

// helperSpec is what the helper applies before it execs the program.
type helperSpec struct {
	RO      []string `json:"ro,omitempty"`      // directories readable and executable
	RW      []string `json:"rw,omitempty"`      // directories readable, writable and executable
	ROFiles []string `json:"roFiles,omitempty"` // single files readable
	RWFiles []string `json:"rwFiles,omitempty"` // single files readable and writable (devices)
	DevDirs []string `json:"devDirs,omitempty"` // rw with device ioctls (a private /dev)
	// Egress is the proxy socket as the helper sees it; set, the network
	// is on (through the bridge), else off.
	Egress string `json:"egress,omitempty"`
	// LoopbackUp: the helper brings lo up in the network namespace the
	// server gave it (Landlock-only mode), then drops the capability.
	LoopbackUp bool   `json:"loopbackUp,omitempty"`
	Dir        string `json:"dir"`
	UID        int    `json:"uid"`
	GID        int    `json:"gid"`
	Limits     Limits `json:"limits"`
	// DeathSignal re-arms the parent-death signal after the identity
	// change, which clears it (Landlock-only mode, where nothing else ties
	// the command's life to the server's).
	DeathSignal bool     `json:"deathSignal,omitempty"`
	Path        string   `json:"path"`
	Args        []string `json:"args"` // argv, including argv[0]

	// CgroupFDs are inherited cgroup.procs files of the command's group:
	// the helper joins them first, so everything it runs is capped.
	CgroupFDs []int `json:"cgroupFds,omitempty"`
}

func encodeSpec(s helperSpec) (string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("encode sandbox spec: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// init turns any binary linking this package into the helper when it is
// re-executed with helperArg: it confines itself and execs the program,
// before main or any test runs.
func init() {
	if len(os.Args) == 3 && os.Args[1] == helperArg {
		os.Exit(helperMain(os.Args[2]))
	}
	if len(os.Args) > 2 && os.Args[1] == bridgeArg {
		os.Exit(bridgeMain(os.Args[2:]))
	}
}

// helperMain applies the spec and execs the program; it returns only on
// failure. Order matters: the helper joins its group's cgroups before
// anything else, so all it starts is counted there; chdir and Landlock
// rules are set up while the helper may still read everything (it can be
// root), limits are lowered, and the identity is dropped last, before exec.
func helperMain(encoded string) int {
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "harness sandbox: "+format+"\n", args...)
		return code
	}
	raw, err := base64.RawURLEncoding.DecodeString(encoded)
	if err != nil {
		return fail(exitSetup, "bad spec: %v", err)
	}
	var s helperSpec
	if err := json.Unmarshal(raw, &s); err != nil {
		return fail(exitSetup, "bad spec: %v", err)
	}
	if err := joinCgroups(s.CgroupFDs); err != nil {
		return fail(exitSetup, "cgroups: %v", err)
	}
	parent := os.Getppid()
	if s.Dir != "" {
		if err := os.Chdir(s.Dir); err != nil {
			return fail(exitSetup, "working directory: %v", err)
		}
	}
	env := os.Environ()
	if s.Egress != "" {
		if s.LoopbackUp {
			if err := loopbackUp(); err != nil {
				return fail(exitSetup, "network: %v", err)
			}
			if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
				return fail(exitSetup, "capabilities: %v", err)
			}
		}
		vars, err := startBridge(s.Egress, s.UID, s.GID)
		if err != nil {
			return fail(exitSetup, "network: %v", err)
		}
		env = withVars(env, vars)
	}
	if err := restrictLandlock(s); err != nil {
		return fail(exitSetup, "landlock: %v", err)
	}
	if err := setLimits(s.Limits); err != nil {
		return fail(exitSetup, "limits: %v", err)
	}
	if err := dropIdentity(s.UID, s.GID); err != nil {
		return fail(exitSetup, "identity: %v", err)
	}
	if s.DeathSignal {
		if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
			return fail(exitSetup, "parent-death signal: %v", err)
		}
		if os.Getppid() != parent {
			return fail(exitSetup, "the server exited")
		}
	}
	err = syscall.Exec(s.Path, s.Args, env)
	return fail(exitExec, "exec %s: %v", s.Path, err)
}

// restrictLandlock confines the helper (and what it execs) to the spec's
// paths; TCP is refused unless the network is on; signals and abstract
// UNIX sockets stay inside the domain. Best effort below ABI 7, but a kernel
// without Landlock is refused here: Status never chooses a Landlock mode
// there, so reaching this means the kernel changed under us.
func restrictLandlock(s helperSpec) error {
	if landlockABI() < 1 {
		return fmt.Errorf("the kernel does not support Landlock")
	}
	cfg := landlock.V7
	if s.Egress != "" {
		// The namespace has only loopback: the bridge, and servers the
		// command starts itself.
		cfg.HandledAccessNet = 0
	}
	rules := []landlock.Rule{
		landlock.RODirs(s.RO...).IgnoreIfMissing(),
		landlock.RWDirs(s.RW...).WithRefer(),
		landlock.ROFiles(s.ROFiles...).IgnoreIfMissing(),
		landlock.RWFiles(s.RWFiles...).IgnoreIfMissing(),
		landlock.RWDirs(s.DevDirs...).WithIoctlDev().IgnoreIfMissing(),
	}
	return cfg.BestEffort().Restrict(rules...)
}

// setLimits lowers the rlimits (soft and hard, so the process cannot raise
// them again).
func setLimits(l Limits) error {
	for _, r := range []struct {
		res int
		v   uint64
	}{
		{unix.RLIMIT_CPU, l.CPUSeconds},
		{unix.RLIMIT_DATA, l.MemoryBytes},
		{unix.RLIMIT_NPROC, l.Processes},
		{unix.RLIMIT_FSIZE, l.FileSizeBytes},
		{unix.RLIMIT_NOFILE, l.OpenFiles},
	} {
		if r.v == 0 {
			continue
		}
		var cur unix.Rlimit
		if err := unix.Getrlimit(r.res, &cur); err != nil {
			return err
		}
		v := r.v
		if cur.Max != unix.RLIM_INFINITY && cur.Max < v {
			v = cur.Max // never raise
		}
		if err := unix.Setrlimit(r.res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("rlimit %d: %w", r.res, err)
		}
	}
	return nil
}

// dropIdentity switches to uid/gid with no supplementary groups when the
// helper runs as someone else (root); a matching identity is kept.
func dropIdentity(uid, gid int) error {
	if os.Getuid() == uid && os.Getgid() == gid && os.Geteuid() == uid {
		return nil
	}
	if err := syscall.Setgroups([]int{gid}); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(gid); err != nil {
		return fmt.Errorf("setgid %d: %w", gid, err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return fmt.Errorf("setuid %d: %w", uid, err)
	}
	if os.Geteuid() != uid || os.Getegid() != gid {
		return fmt.Errorf("identity is %d:%d after switching to %d:%d", os.Geteuid(), os.Getegid(), uid, gid)
	}
	return nil
}

// withVars sets the variables kv ("K=V") in env, replacing any of the same
// name.
func withVars(env, kv []string) []string {
	names := map[string]bool{}
	for _, v := range kv {
		k, _, _ := strings.Cut(v, "=")
		names[k] = true
	}
	out := make([]string, 0, len(env)+len(kv))
	for _, v := range env {
		if k, _, _ := strings.Cut(v, "="); !names[k] {
			out = append(out, v)
		}
	}
	return append(out, kv...)
}
