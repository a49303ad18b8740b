package workspace

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DiskMechanism says what enforces the workspace quota.
type DiskMechanism string

// DiskMeasured: the server measures each session's files before a write
// tool and after each write or exec call, refuses write tools at the quota
// and caps each process's file size (RLIMIT_FSIZE) at what is left.
const DiskMeasured DiskMechanism = "measured"

// DiskStatus is the workspace quota and how it is enforced, for the start
// log, /api/sandbox and Settings.
type DiskStatus struct {
	QuotaBytes int64         `json:"quotaBytes"`
	Mechanism  DiskMechanism `json:"mechanism"`
	// Why says why the kernel does not enforce it.
	Why string `json:"why"`
}

// diskStatus reports the quota's mechanism for workspaces under dir. The
// kernel's project quotas are not used yet: they need a file system
// mounted with prjquota, which Why names when it is missing.
func diskStatus(quota int64, dir string) DiskStatus {
	st := DiskStatus{QuotaBytes: quota, Mechanism: DiskMeasured}
	fsType, opts, err := mountOf(dir)
	switch {
	case err != nil:
		st.Why = "the file system of " + dir + " is unknown (" + err.Error() + ")"
	case hasOption(opts, "prjquota", "pquota", "prjjquota"):
		st.Why = fmt.Sprintf("the %s file system of %s has project quotas, which Harness does not set yet", fsType, dir)
	default:
		st.Why = fmt.Sprintf("the %s file system of %s has no project quotas (mount option prjquota)", fsType, dir)
	}
	return st
}

// mountOf finds the mount holding dir in /proc/self/mountinfo: its file
// system type and its options (mount and super block).
func mountOf(dir string) (fsType string, opts []string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	best := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - type source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 6 || len(tail) < 3 {
			continue
		}
		mp := fields[4]
		if !within(mp, dir) || len(mp) < len(best) {
			continue
		}
		best, fsType = mp, tail[0]
		opts = append(strings.Split(fields[5], ","), strings.Split(tail[2], ",")...)
	}
	if err := sc.Err(); err != nil {
		return "", nil, err
	}
	if best == "" {
		return "", nil, fmt.Errorf("no mount holds %s", dir)
	}
	return fsType, opts, nil
}

func hasOption(opts []string, names ...string) bool {
	for _, o := range opts {
		for _, n := range names {
			if o == n {
				return true
			}
		}
	}
	return false
}

// measureBudget bounds one walk of a session's files; a walk cut short
// counts what it saw (a lower bound).
const measureBudget = 10 * time.Second

// meter measures each session's disk use (workspace and scratch directory)
// against the quota and caches the last figure, so a call right after
// another reuses the measurement taken when that one ended.
type meter struct {
	mu       sync.Mutex
	sessions map[string]*usage
}

type usage struct {
	bytes    int64
	measured bool // bytes is a measurement
	valid    bool // measured after the last call, none running since
	inflight int  // write or exec calls running
}

func newMeter() *meter { return &meter{sessions: map[string]*usage{}} }

func (m *meter) get(id string) *usage {
	u, ok := m.sessions[id]
	if !ok {
		u = &usage{}
		m.sessions[id] = u
	}
	return u
}

// forget drops a deleted session's figure.
func (m *meter) forget(id string) {
	m.mu.Lock()
	delete(m.sessions, id)
	m.mu.Unlock()
}

// cached is the last figure, if one is current.
func (m *meter) cached(id string) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.get(id)
	return u.bytes, u.valid && u.inflight == 0
}

// last is the last figure, current or not (the one a running call's
// check used), if any.
func (m *meter) last(id string) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.get(id)
	return u.bytes, u.measured
}

// measure walks dirs and stores the figure; valid says it may be reused
// (no other call of the session runs).
func (m *meter) measure(ctx context.Context, id string, dirs ...string) int64 {
	n := diskUsage(ctx, dirs...)
	m.mu.Lock()
	u := m.get(id)
	u.bytes, u.measured, u.valid = n, true, u.inflight == 0
	m.mu.Unlock()
	return n
}

func (m *meter) start(id string) {
	m.mu.Lock()
	u := m.get(id)
	u.inflight++
	u.valid = false
	m.mu.Unlock()
}

func (m *meter) end(id string) {
	m.mu.Lock()
	m.get(id).inflight--
	m.mu.Unlock()
}

// diskUsage is the space the files under dirs take on disk (allocated
// blocks, each inode once; directories are not counted, so a quota holds
// exactly its size in files), never following symbolic links. Unreadable
// parts are skipped; the walk stops at measureBudget.
func diskUsage(ctx context.Context, dirs ...string) int64 {
	ctx, cancel := context.WithTimeout(ctx, measureBudget)
	defer cancel()
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	var total int64
	for _, dir := range dirs {
		_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
			if ctx.Err() != nil {
				return fs.SkipAll
			}
			if err != nil || d.IsDir() {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			st, ok := fi.Sys().(*syscall.Stat_t)
			if !ok {
				total += fi.Size()
				return nil
			}
			if st.Nlink > 1 {
				k := inode{uint64(st.Dev), st.Ino}
				if seen[k] {
					return nil
				}
				seen[k] = true
			}
			total += st.Blocks * 512
			return nil
		})
	}
	return total
}
