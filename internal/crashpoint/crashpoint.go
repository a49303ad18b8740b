// Package crashpoint lets process tests crash a server at a chosen point
// of its work, as a power cut or the kernel's OOM killer would.
//
// It is inert outside test binaries: the process tests run the server from
// the test binary (cmd/web TestMain), so testing.Testing() is true there
// and false in every binary built with go build. In a test binary,
// HARNESS_TEST_CRASH_AT=name:N makes the N-th Hit of name (counted from 1
// in this process) SIGKILL the process: no deferred call, no flush, no
// shutdown code runs.
package crashpoint

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// Points this repository hits.
const (
	// ForkCopyFile is hit after each file a fork's copy writes.
	ForkCopyFile = "fork-copy-file"
	// ForkCopied is hit once a fork's copy is done, before its outcome is
	// logged.
	ForkCopied = "fork-copied"
	// ForkLogged is hit once a fork's outcome is logged, before the
	// session row records it.
	ForkLogged = "fork-logged"
	// CloneProgress is hit after each progress line git reports.
	CloneProgress = "clone-progress"
	// CloneDone is hit once a clone is done, before its outcome is logged.
	CloneDone = "clone-done"
	// CloneLogged is hit once a clone's outcome is logged, before the
	// session row records it.
	CloneLogged = "clone-logged"
)

var (
	once   sync.Once
	target string
	at     int64
	count  atomic.Int64
)

func load() {
	if !testing.Testing() {
		return
	}
	name, n, ok := strings.Cut(os.Getenv("HARNESS_TEST_CRASH_AT"), ":")
	if !ok {
		return
	}
	v, err := strconv.ParseInt(n, 10, 64)
	if err != nil || v < 1 {
		return
	}
	target, at = name, v
}

// Hit counts a pass through the point name and kills the process at the
// chosen pass.
func Hit(name string) {
	once.Do(load)
	if target == "" || name != target {
		return
	}
	if count.Add(1) == at {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way; nothing more may run
	}
}
