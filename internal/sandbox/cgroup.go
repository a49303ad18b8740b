package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// CgroupMode says which cgroup mechanism caps a group's processes together.
type CgroupMode string

const (
	CgroupNone CgroupMode = ""   // not in force: per-process rlimits only
	CgroupV1   CgroupMode = "v1" // one cgroup per group in the memory, pids and cpu hierarchies
)

// cpuShares is every group's CPU weight (the v1 default): sessions share
// the CPU equally, however many processes each starts.
const cpuShares = 1024

// groupPattern keeps group names safe as cgroup directory names.
var groupPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// capSubsystems are the v1 hierarchies a group's cgroup lives in.
var capSubsystems = []cgroup1.Name{cgroup1.Memory, cgroup1.Pids, cgroup1.Cpu}

// cgroupCaps holds the server's parent cgroup and one child per group (a
// session), created at the group's first command. A group's processes
// share its memory limit (memory and swap), process count and CPU weight.
type cgroupCaps struct {
	name   string // the parent, under the server's own cgroup
	limits Limits
	memsw  bool // memory.memsw.* exists: swap counts against the limit

	mu     sync.Mutex
	parent cgroup1.Cgroup
	groups map[string]*capGroup
}

// capGroup is one group's cgroup and its cgroup.procs files (one per
// hierarchy), opened once and passed to every command of the group: the
// helper joins by writing "0" to each before it runs anything.
type capGroup struct {
	cg    cgroup1.Cgroup
	procs []*os.File
	dirs  map[cgroup1.Name]string
}

// newCgroupCaps creates (or takes over) the parent cgroup and removes the
// groups a previous run of this server left behind. It fails where cgroups
// cannot be managed (not root, no v1 hierarchies, cgroup v2 alone).
func newCgroupCaps(name string, l Limits) (*cgroupCaps, []string, error) {
	if os.Geteuid() != 0 {
		return nil, nil, errors.New("the server does not run as root, so it cannot create cgroups")
	}
	switch cgroups.Mode() {
	case cgroups.Legacy, cgroups.Hybrid:
	case cgroups.Unified:
		return nil, nil, errors.New("this host has cgroup v2 only, which Harness does not manage yet")
	default:
		return nil, nil, errors.New("no cgroup file system is mounted")
	}
	c := &cgroupCaps{name: name, limits: l, groups: map[string]*capGroup{}}
	parent, err := cgroup1.New(cgroup1.NestedPath(name), &specs.LinuxResources{}, cgroup1.WithHierarchy(c.hierarchy))
	if err != nil {
		return nil, nil, fmt.Errorf("create the cgroup %s: %w", name, err)
	}
	c.parent = parent
	dirs, err := c.dirs("")
	if err != nil {
		return nil, nil, err
	}
	if _, err := os.Stat(filepath.Join(dirs[cgroup1.Memory], "memory.memsw.limit_in_bytes")); err == nil {
		c.memsw = true
	}
	left := c.removeStale(dirs)
	// The parent comes back with the first group (the library makes a
	// child's parents): a sandbox that never runs a group's command, or is
	// never closed, leaves nothing behind. It stays while stale groups do.
	_ = removeDirs(dirs)
	return c, left, nil
}

// hierarchy keeps the memory, pids and cpu hierarchies; all three must be
// mounted.
func (c *cgroupCaps) hierarchy() ([]cgroup1.Subsystem, error) {
	all, err := cgroup1.Default()
	if err != nil {
		return nil, err
	}
	var out []cgroup1.Subsystem
	for _, want := range capSubsystems {
		found := false
		for _, s := range all {
			if s.Name() == want {
				out, found = append(out, s), true
			}
		}
		if !found {
			return nil, fmt.Errorf("the cgroup v1 %s hierarchy is not mounted", want)
		}
	}
	return out, nil
}

// dirs are the directories of the parent's child group (the parent itself
// for "") in each hierarchy.
func (c *cgroupCaps) dirs(group string) (map[cgroup1.Name]string, error) {
	path := cgroup1.NestedPath(filepath.Join(c.name, group))
	out := map[cgroup1.Name]string{}
	for _, s := range c.parent.Subsystems() {
		p, ok := s.(interface{ Path(string) string })
		if !ok {
			return nil, fmt.Errorf("cgroup %s: no path", s.Name())
		}
		rel, err := path(s.Name())
		if err != nil {
			return nil, fmt.Errorf("cgroup %s: %w", s.Name(), err)
		}
		out[s.Name()] = p.Path(rel)
	}
	return out, nil
}

// removeStale removes the child cgroups a previous run left (a crash, or
// sessions deleted while the server was down); it returns what it could
// not remove (processes still inside).
func (c *cgroupCaps) removeStale(dirs map[cgroup1.Name]string) []string {
	var left []string
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				left = append(left, filepath.Join(dir, e.Name()))
			}
		}
	}
	return left
}

// procsFiles returns group's cgroup.procs files, creating its cgroup with
// the caps at its first use.
func (c *cgroupCaps) procsFiles(group string) (*capGroup, error) {
	if !groupPattern.MatchString(group) {
		return nil, fmt.Errorf("sandbox: invalid group name %q", group)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if g, ok := c.groups[group]; ok {
		if _, err := os.Stat(g.dirs[cgroup1.Memory]); err == nil {
			return g, nil
		}
		// Removed under us (another server's start-up cleanup): make it
		// again rather than fail every command of the group.
		delete(c.groups, group)
	}
	mem := int64(c.limits.MemoryBytes)
	procs := int64(c.limits.Processes)
	shares := uint64(cpuShares)
	res := &specs.LinuxResources{
		Memory: &specs.LinuxMemory{Limit: &mem},
		Pids:   &specs.LinuxPids{Limit: &procs},
		CPU:    &specs.LinuxCPU{Shares: &shares},
	}
	if c.memsw {
		res.Memory.Swap = &mem
	}
	cg, err := c.parent.New(group, res)
	if err != nil {
		return nil, fmt.Errorf("create the cgroup of %s: %w", group, err)
	}
	dirs, err := c.dirs(group)
	if err != nil {
		return nil, err
	}
	g := &capGroup{cg: cg, dirs: dirs}
	for _, name := range capSubsystems {
		f, err := os.OpenFile(filepath.Join(dirs[name], "cgroup.procs"), os.O_WRONLY, 0)
		if err != nil {
			closeAll(g.procs)
			return nil, fmt.Errorf("open the cgroup of %s: %w", group, err)
		}
		g.procs = append(g.procs, f)
	}
	c.groups[group] = g
	return g, nil
}

// oomKills is how many processes the kernel killed in group for its memory
// cap (0 for a group that has no cgroup yet).
func (c *cgroupCaps) oomKills(group string) uint64 {
	c.mu.Lock()
	g, ok := c.groups[group]
	c.mu.Unlock()
	if !ok {
		return 0
	}
	return readOOMKills(filepath.Join(g.dirs[cgroup1.Memory], "memory.oom_control"))
}

// readOOMKills reads the oom_kill line of memory.oom_control.
func readOOMKills(path string) uint64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "oom_kill "); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// remove deletes group's cgroup; it fails while processes are inside.
// The cgroup.procs files are not closed here: a command built but not yet
// started may hold them, and closing would let the descriptor numbers be
// reused under it. They close when garbage (os.File's cleanup).
func (c *cgroupCaps) remove(group string) error {
	if !groupPattern.MatchString(group) {
		return fmt.Errorf("sandbox: invalid group name %q", group)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.groups[group]
	if !ok {
		dirs, err := c.dirs(group)
		if err != nil {
			return err
		}
		return removeDirs(dirs)
	}
	if err := g.cg.Delete(); err != nil && !errors.Is(err, cgroup1.ErrCgroupDeleted) {
		return fmt.Errorf("remove the cgroup of %s: %w", group, err)
	}
	delete(c.groups, group)
	return nil
}

// close removes every group's cgroup and the parent (what still has
// processes stays, for the next start's cleanup).
func (c *cgroupCaps) close() error {
	c.mu.Lock()
	var names []string
	for name := range c.groups {
		names = append(names, name)
	}
	c.mu.Unlock()
	var errs []error
	for _, name := range names {
		errs = append(errs, c.remove(name))
	}
	dirs, err := c.dirs("")
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	c.removeStale(dirs)
	errs = append(errs, removeDirs(dirs))
	return errors.Join(errs...)
}

// RemoveCgroups removes the parent cgroup name (below this process's own)
// and its children where no process is left: what a server killed
// without its shutdown left, for those who know its name (tests that kill
// servers whose data directories then go away).
func RemoveCgroups(name string) error {
	c, _, err := newCgroupCaps(name, Limits{})
	if err != nil {
		return err
	}
	return c.close()
}

// removeDirs removes cgroup directories (rmdir; cgroupfs refuses other
// removals), ignoring those already gone.
func removeDirs(dirs map[cgroup1.Name]string) error {
	var errs []error
	for _, d := range dirs {
		if err := unix.Rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("remove %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// joinCgroups moves the helper (all its threads) into the cgroups whose
// cgroup.procs files it inherited as fds, then closes them, so nothing the
// helper execs can write to them. Each fd must be on a cgroup file system:
// a stray number never gets "0" written to it.
func joinCgroups(fds []int) error {
	for _, fd := range fds {
		var st unix.Statfs_t
		if err := unix.Fstatfs(fd, &st); err != nil {
			return fmt.Errorf("cgroup fd %d: %w", fd, err)
		}
		if st.Type != unix.CGROUP_SUPER_MAGIC && st.Type != unix.CGROUP2_SUPER_MAGIC {
			return fmt.Errorf("fd %d is not a cgroup file", fd)
		}
		if _, err := unix.Write(fd, []byte("0")); err != nil {
			return fmt.Errorf("join cgroup (fd %d): %w", fd, err)
		}
		if err := unix.Close(fd); err != nil {
			return fmt.Errorf("cgroup fd %d: %w", fd, err)
		}
	}
	return nil
}
