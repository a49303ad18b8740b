// Package poll is the tests' one way to wait for a condition that another
// goroutine or process makes true: Eventually polls it until a deadline.
// It imports nothing of the project, so every package's tests (in-package
// ones included) can use it.
package poll

import (
	"testing"
	"time"
)

// Timeout is how long Eventually waits by default: long enough for a loaded
// CI machine, short enough that a broken condition fails the test rather
// than the whole run.
const Timeout = 20 * time.Second

// Interval is the default pause between two checks.
const Interval = 5 * time.Millisecond

// Option changes how Eventually waits.
type Option func(*settings)

type settings struct {
	timeout, interval time.Duration
}

// Within overrides Timeout.
func Within(d time.Duration) Option { return func(s *settings) { s.timeout = d } }

// Every overrides Interval.
func Every(d time.Duration) Option { return func(s *settings) { s.interval = d } }

// Eventually calls cond until it returns true, failing the test with what
// when it has not after the timeout. It also stops (failing) when the test's
// context ends.
func Eventually(t testing.TB, what string, cond func() bool, opts ...Option) {
	t.Helper()
	if !Wait(t, cond, opts...) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// Wait is Eventually without failing: it reports whether cond became true.
func Wait(t testing.TB, cond func() bool, opts ...Option) bool {
	t.Helper()
	s := settings{timeout: Timeout, interval: Interval}
	for _, o := range opts {
		o(&s)
	}
	deadline := time.Now().Add(s.timeout)
	tick := time.NewTicker(s.interval)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-tick.C:
		case <-t.Context().Done():
			return cond()
		}
	}
}
