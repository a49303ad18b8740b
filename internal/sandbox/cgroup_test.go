package sandbox_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"harness/internal/sandbox"
	"harness/internal/testkit/poll"
)

// requireCaps builds a sandbox in mode m whose session caps are in force,
// with a cgroup parent of its own (removed at the end).
func requireCaps(t *testing.T, m sandbox.Mode, limits sandbox.Limits) *sandbox.Sandbox {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("!!! SKIPPING: session cgroups need a server running as root !!!")
	}
	name := fmt.Sprintf("harness-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	sb, err := sandbox.New(t.Context(), nil, sandbox.Config{Mode: m, Limits: limits, CgroupName: name})
	if err != nil {
		t.Fatalf("sandbox mode %s: %v", m, err)
	}
	st := sb.Status()
	if st.Cgroups != sandbox.CgroupV1 {
		t.Fatalf("cgroups are not in force: %q (%s)", st.Cgroups, st.CgroupProblem)
	}
	t.Cleanup(func() {
		// Killed commands' processes may take a moment to leave (the
		// test's context is over here: poll would not wait).
		err := sb.Close()
		for deadline := time.Now().Add(time.Minute); err != nil && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
			err = sb.Close()
		}
		if err != nil {
			t.Errorf("remove the cgroups: %v", err)
		}
		// The server's pids and cpu cgroups are the roots here (memory
		// may be nested deeper).
		for _, h := range []string{"pids", "cpu"} {
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", h, name)); err == nil {
				t.Errorf("the %s cgroup %s is still there", h, name)
			}
		}
	})
	return sb
}

// alloc touches n MiB of private memory, page by page, and holds it.
func alloc(mib int) string {
	return fmt.Sprintf(`/usr/bin/python3 -c 'import time; b = bytearray(%d << 20); b[::4096] = b"\x01" * (len(b) // 4096); print("held", flush=True); time.sleep(3); print("lived", flush=True)'`, mib)
}

// TestSessionMemoryCap: three processes of one group each touching 0.9 GiB
// under a 2 GiB cap cannot all live; the kernel kills at least one and
// the group's OOM counter says so. Another group is not affected.
func TestSessionMemoryCap(t *testing.T) {
	for _, m := range confinedModes {
		t.Run(string(m), func(t *testing.T) {
			sb := requireCaps(t, m, sandbox.Limits{MemoryBytes: 2 << 30})
			l := newLayout(t, sb)
			if n := sb.OOMKills("s1"); n != 0 {
				t.Fatalf("OOM kills before anything ran: %d", n)
			}
			script := fmt.Sprintf("for i in 1 2 3; do %s & done; wait; echo done", alloc(900))
			out, _ := run(t, sb, sandbox.Process{Workspace: l.ws, Group: "s1"}, script)
			// "held" alone is not enough: the kernel may kill a process after
			// it printed it, once a later one pushes the group over the cap.
			lived := countLines(out, "lived")
			if lived == 3 {
				t.Errorf("all three allocations lived under a 2 GiB cap:\n%s", out)
			}
			if n := sb.OOMKills("s1"); n == 0 {
				t.Errorf("no OOM kill counted (lived %d):\n%s", lived, out)
			}
			// Another session's processes have their own cap.
			out, _ = run(t, sb, sandbox.Process{Workspace: l.ws, Group: "s2"}, alloc(900))
			if countLines(out, "lived") != 1 || sb.OOMKills("s2") != 0 {
				t.Errorf("another group's 0.9 GiB was refused: %q, %d kills", out, sb.OOMKills("s2"))
			}
		})
	}
}

// TestSessionProcessCap: the pids cap holds across commands of a group: a
// second command counts the processes the first one still runs.
func TestSessionProcessCap(t *testing.T) {
	for _, m := range confinedModes {
		t.Run(string(m), func(t *testing.T) {
			sb := requireCaps(t, m, sandbox.Limits{Processes: 32})
			l := newLayout(t, sb)
			first, err := sb.Command(sandbox.Process{
				Path: "bash", Args: []string{"-c", "for i in $(seq 1 20); do sleep 30 & done; touch started; wait"},
				Workspace: l.ws, Env: []string{"PATH=/usr/bin:/bin"}, Group: "s1",
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := first.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				_ = syscall.Kill(-first.Process.Pid, syscall.SIGKILL)
				_ = first.Wait()
			}()
			poll.Eventually(t, "the first command's sleeps to start", func() bool {
				_, err := os.Stat(filepath.Join(l.ws, "started"))
				return err == nil
			})
			// 21 processes of s1 run; 16 more cannot all start under 32
			// (the cap counts tasks: the helper's threads too, briefly).
			// Each child marks its start; the shell may give up at the
			// first fork the cap refuses.
			script := "for i in $(seq 1 16); do (touch n$i; exec sleep 5) & done 2>/dev/null; wait"
			started := func(prefix string) int {
				marks, _ := filepath.Glob(filepath.Join(l.ws, prefix+"*"))
				return len(marks)
			}
			run(t, sb, sandbox.Process{Workspace: l.ws, Group: "s1"}, script)
			if n := started("n"); n >= 16 {
				t.Errorf("the second command started %d processes beside the first's 21 under a cap of 32", n)
			}
			// Another group starts all 16.
			run(t, sb, sandbox.Process{Workspace: l.ws, Group: "s2"}, strings.ReplaceAll(script, "touch n", "touch o"))
			if n := started("o"); n != 16 {
				t.Errorf("another group started %d processes, want 16", n)
			}
		})
	}
}

// TestRemoveGroup: a removed group's cgroup is gone, and its next command
// makes a new one.
func TestRemoveGroup(t *testing.T) {
	sb := requireCaps(t, sandbox.ModeBwrap, sandbox.Limits{})
	l := newLayout(t, sb)
	out, _ := run(t, sb, sandbox.Process{Workspace: l.ws, Group: "s1"}, "cat /proc/self/cgroup")
	if !strings.Contains(out, "s1") {
		t.Fatalf("the command is not in the group's cgroup:\n%s", out)
	}
	if err := sb.RemoveGroup("s1"); err != nil {
		t.Fatal(err)
	}
	out, code := run(t, sb, sandbox.Process{Workspace: l.ws, Group: "s1"}, "echo again")
	if code != 0 || !strings.Contains(out, "again") {
		t.Fatalf("after removal: %d %q", code, out)
	}
}

// countLines counts the lines of out that are exactly s.
func countLines(out, s string) int {
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) == s {
			n++
		}
	}
	return n
}

// TestNoCgroupsSaysWhy: without cgroups the status says why, and a
// group's commands still run, capped by rlimits (RLIMIT_DATA per process).
func TestNoCgroupsSaysWhy(t *testing.T) {
	sb, err := sandbox.New(t.Context(), nil, sandbox.Config{Mode: sandbox.ModeBwrap, NoCgroups: true, Limits: sandbox.Limits{MemoryBytes: 256 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	st := sb.Status()
	if st.Cgroups != sandbox.CgroupNone || st.CgroupProblem == "" {
		t.Fatalf("cgroups %q, problem %q", st.Cgroups, st.CgroupProblem)
	}
	l := newLayout(t, sb)
	out, _ := run(t, sb, sandbox.Process{Workspace: l.ws, Group: "s1"}, alloc(512)+"; echo status=$?")
	if countLines(out, "held") != 0 || sb.OOMKills("s1") != 0 {
		t.Errorf("512 MiB under a 256 MiB per-process limit:\n%s", out)
	}
}
