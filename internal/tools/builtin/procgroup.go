package builtin

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// groupPoll is how often a terminating group is checked during the grace.
const groupPoll = 20 * time.Millisecond

// killWait bounds how long a SIGKILLed group may take to die (the kernel
// delivers the signal asynchronously).
const killWait = 2 * time.Second

// terminateGroup sends SIGTERM to the process group, waits up to grace for
// every live member to exit, then kills what is left.
func terminateGroup(pgid int, grace time.Duration) {
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil {
		return // the group is already gone
	}
	if waitGroupGone(pgid, grace) {
		return
	}
	killGroup(pgid)
}

// killGroup sends SIGKILL to whatever is left of the group and waits until
// no live member remains.
func killGroup(pgid int) {
	if !groupAlive(pgid) {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	waitGroupGone(pgid, killWait)
}

// waitGroupGone polls until the group has no live member or d passes.
func waitGroupGone(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !groupAlive(pgid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(groupPoll)
	}
}

// groupAlive reports whether the group has a member that is not a zombie.
// Zombies are dead; orphans among them wait for init to reap them, which may
// be slow, so kill(-pgid, 0) alone would overstate liveness.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); err != nil {
		return !errors.Is(err, syscall.ESRCH)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // no procfs: trust kill
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		state, pg, ok := procStat(filepath.Join("/proc", e.Name(), "stat"))
		if ok && pg == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// procStat reads the state and process group from /proc/<pid>/stat.
func procStat(path string) (state byte, pgid int, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	// The command name is parenthesised and may contain spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	pg, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], pg, true
}
