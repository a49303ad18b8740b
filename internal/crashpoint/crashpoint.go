// Package crashpoint lets process tests crash a server at a chosen point
// of its work, as a power cut or the kernel's OOM killer would.
//
// It is inert outside test binaries: the process tests run the server from
// the test binary (cmd/web TestMain), so testing.Testing() is true there
// and false in every binary built with go build. In a test binary,
// HARNESS_TEST_CRASH_AT=name:N makes the N-th Hit of name (counted from 1
// in this process) SIGKILL the process: no deferred call, no flush, no
// shutdown code runs. HARNESS_TEST_PAUSE_AT=name:D makes every Hit of name
// wait D first, so that a test killing the server from outside at random
// times lands between the points.
package crashpoint

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
	// ImportStep is hit at each step of an import: its workspace made,
	// its log built, stored, loaded.
	ImportStep = "import-step"
)

var (
	once   sync.Once
	target string
	at     int64
	count  atomic.Int64
	paused string
	pause  time.Duration
)

func load() {
	if !testing.Testing() {
		return
	}
	if name, n, ok := strings.Cut(os.Getenv("HARNESS_TEST_CRASH_AT"), ":"); ok {
		if v, err := strconv.ParseInt(n, 10, 64); err == nil && v >= 1 {
			target, at = name, v
		}
	}
	if name, d, ok := strings.Cut(os.Getenv("HARNESS_TEST_PAUSE_AT"), ":"); ok {
		if v, err := time.ParseDuration(d); err == nil && v > 0 {
			paused, pause = name, v
		}
	}
}

// Hit counts a pass through the point name: it waits there when asked to,
// and kills the process at the chosen pass.
func Hit(name string) {
	once.Do(load)
	if name == paused {
		time.Sleep(pause)
	}
	if target == "" || name != target {
		return
	}
	if count.Add(1) == at {
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Kill() // SIGKILL where there are signals
		}
		select {} // the kill is on its way; nothing more may run
	}
}
