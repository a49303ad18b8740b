package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Mode says which mechanisms confine tool processes.
type Mode string

const (
	// ModeAuto uses bubblewrap and Landlock when bubblewrap works, else
	// Landlock alone; without Landlock tool processes are refused.
	ModeAuto Mode = "auto"
	// ModeBwrap requires bubblewrap and Landlock.
	ModeBwrap Mode = "bwrap"
	// ModeLandlock uses Landlock alone (no namespaces).
	ModeLandlock Mode = "landlock"
	// ModeOff runs tool processes unconfined. Only an admin's explicit
	// HARNESS_SANDBOX=off selects it.
	ModeOff Mode = "off"
)

// Limits are the resource limits of sandboxed processes. Memory and
// Processes are per group (a session) where cgroups are in force, else per
// process (RLIMIT_DATA) and per sandbox (RLIMIT_NPROC); the others are
// rlimits of each process. DiskBytes is the workspace quota, which
// internal/workspace enforces. Zero means the default.
type Limits struct {
	CPUSeconds    uint64 `json:"cpuSeconds"`    // RLIMIT_CPU
	MemoryBytes   uint64 `json:"memoryBytes"`   // cgroup memory (+swap), else RLIMIT_DATA
	Processes     uint64 `json:"processes"`     // cgroup pids, and RLIMIT_NPROC per sandbox
	FileSizeBytes uint64 `json:"fileSizeBytes"` // RLIMIT_FSIZE
	OpenFiles     uint64 `json:"openFiles"`     // RLIMIT_NOFILE
	DiskBytes     uint64 `json:"diskBytes"`     // per workspace
}

// Default limits. CPU matches the bash tool's longest timeout; data size is
// counted on writable private mappings, so runtimes that reserve large
// address ranges (V8, the JVM) still start.
const (
	DefaultCPUSeconds    = 600
	DefaultMemoryBytes   = 4 << 30
	DefaultProcesses     = 512
	DefaultFileSizeBytes = 2 << 30
	DefaultOpenFiles     = 4096
	DefaultDiskBytes     = 10 << 30
)

func (l Limits) withDefaults() Limits {
	def := func(v *uint64, d uint64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.CPUSeconds, DefaultCPUSeconds)
	def(&l.MemoryBytes, DefaultMemoryBytes)
	def(&l.Processes, DefaultProcesses)
	def(&l.FileSizeBytes, DefaultFileSizeBytes)
	def(&l.OpenFiles, DefaultOpenFiles)
	def(&l.DiskBytes, DefaultDiskBytes)
	return l
}

// NobodyID is the uid and gid tools run as when the server runs as root.
const NobodyID = 65534

// Config configures the sandbox.
type Config struct {
	Mode Mode
	// BwrapPath is the bubblewrap binary; empty looks "bwrap" up in PATH.
	BwrapPath string
	// ReadOnly are extra host paths tools may read (and execute), besides
	// /usr, /bin, /sbin, /lib*, and /etc.
	ReadOnly []string
	// UID and GID are who tools run as when the server runs as root
	// (default 65534, "nobody"). A server that is not root cannot change
	// identity: tools run as its own user, confined by the mechanisms.
	UID, GID int
	Limits   Limits
	// CgroupName names the server's parent cgroup, created below the
	// server's own cgroup (default "harness"); each group's (session's)
	// cgroup is its child. Servers sharing a host and a cgroup need
	// different names: each removes its parent's stale children at start.
	CgroupName string
	// NoCgroups leaves cgroups alone (memory and processes are capped by
	// rlimits only): for the sandbox tests share per binary, which no one
	// closes.
	NoCgroups bool
}

// ParseMode reads HARNESS_SANDBOX.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return ModeAuto, nil
	case ModeAuto, ModeBwrap, ModeLandlock, ModeOff:
		return m, nil
	default:
		return "", fmt.Errorf("sandbox mode %q: want auto, bwrap, landlock or off", s)
	}
}

// ParseIdentity reads "uid[:gid]" (HARNESS_SANDBOX_USER); gid defaults to
// uid.
func ParseIdentity(s string) (uid, gid int, err error) {
	u, g, hasGID := strings.Cut(strings.TrimSpace(s), ":")
	uid, err = strconv.Atoi(u)
	if err != nil || uid <= 0 {
		return 0, 0, fmt.Errorf("sandbox user %q: want uid[:gid] with numbers above 0", s)
	}
	gid = uid
	if hasGID {
		gid, err = strconv.Atoi(g)
		if err != nil || gid <= 0 {
			return 0, 0, fmt.Errorf("sandbox user %q: want uid[:gid] with numbers above 0", s)
		}
	}
	return uid, gid, nil
}

// withDefaults fills the identity and limits.
func (c Config) withDefaults() Config {
	if c.Mode == "" {
		c.Mode = ModeAuto
	}
	if c.UID == 0 && c.GID == 0 {
		if os.Geteuid() == 0 {
			c.UID, c.GID = NobodyID, NobodyID
		} else {
			c.UID, c.GID = os.Getuid(), os.Getgid()
		}
	}
	c.Limits = c.Limits.withDefaults()
	if c.CgroupName == "" {
		c.CgroupName = "harness"
	}
	return c
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	if _, err := ParseMode(string(c.Mode)); err != nil {
		errs = append(errs, err)
	}
	if c.UID < 0 || c.GID < 0 {
		errs = append(errs, errors.New("sandbox uid and gid must not be negative"))
	}
	if os.Geteuid() == 0 && (c.UID == 0 || c.GID == 0) && !(c.UID == 0 && c.GID == 0) {
		errs = append(errs, errors.New("tools never run as root: the sandbox uid and gid must both be above 0"))
	}
	if os.Geteuid() != 0 && c.UID != 0 && (c.UID != os.Getuid() || c.GID != os.Getgid()) {
		errs = append(errs, fmt.Errorf("the sandbox user %d:%d needs a server running as root (it runs as %d)", c.UID, c.GID, os.Getuid()))
	}
	if c.CgroupName != "" && !groupPattern.MatchString(c.CgroupName) {
		errs = append(errs, fmt.Errorf("sandbox cgroup name %q: want letters, digits, - and _", c.CgroupName))
	}
	for _, p := range c.ReadOnly {
		if !filepath.IsAbs(p) {
			errs = append(errs, fmt.Errorf("sandbox read-only path %q must be absolute", p))
		}
	}
	return errors.Join(errs...)
}
