// Package sandboxtest gives tests one real sandbox per test binary.
package sandboxtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"harness/internal/sandbox"
)

var (
	once   sync.Once
	shared *sandbox.Sandbox
	err    error
)

// Shared returns a sandbox in auto mode, built once per test binary. A
// machine that cannot confine fails the test, unless
// HARNESS_TEST_ALLOW_NO_SANDBOX=1 says it cannot (then tools run
// unconfined, loudly).
func Shared(t testing.TB) *sandbox.Sandbox {
	t.Helper()
	sb, err := Get()
	if err != nil {
		t.Fatalf("%v", err)
	}
	if !sb.Status().Confined {
		t.Logf("!!! TOOLS RUN UNCONFINED IN THIS TEST (HARNESS_TEST_ALLOW_NO_SANDBOX=1) !!!")
	}
	return sb
}

// Get is Shared for code without a testing.TB (fake hosts): the error says
// why no sandbox is available.
func Get() (*sandbox.Sandbox, error) {
	once.Do(func() {
		// Nothing closes it, so it makes no cgroups: they would outlive
		// the binary (the cap tests use sandboxes of their own).
		shared, err = sandbox.New(context.Background(), nil, sandbox.Config{Mode: sandbox.ModeAuto, NoCgroups: true})
		if err == nil && !shared.Status().Confined {
			if os.Getenv("HARNESS_TEST_ALLOW_NO_SANDBOX") == "1" {
				shared, err = sandbox.New(context.Background(), nil, sandbox.Config{Mode: sandbox.ModeOff})
				return
			}
			err = &noSandbox{shared.Status()}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w (install bubblewrap on a kernel with Landlock; HARNESS_TEST_ALLOW_NO_SANDBOX=1 runs tools unconfined where that is impossible)", err)
	}
	return shared, nil
}

type noSandbox struct{ st sandbox.Status }

func (e *noSandbox) Error() string { return "no confining sandbox here: " + e.st.Summary() }
