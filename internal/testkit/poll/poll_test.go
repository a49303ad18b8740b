package poll_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"harness/internal/testkit/poll"
)

func TestEventuallySeesALaterTruth(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	go func() {
		for range 5 {
			n.Add(1)
		}
	}()
	poll.Eventually(t, "five increments", func() bool { return n.Load() == 5 })
}

func TestWaitGivesUpAtItsTimeout(t *testing.T) {
	t.Parallel()
	calls := 0
	ok := poll.Wait(t, func() bool { calls++; return false }, poll.Within(30*time.Millisecond), poll.Every(5*time.Millisecond))
	if ok {
		t.Fatal("Wait reported a condition that never held")
	}
	if calls < 2 {
		t.Fatalf("the condition was checked %d times; want it polled until the timeout", calls)
	}
}

func TestEventuallyFailsWithWhatItWaitedFor(t *testing.T) {
	t.Parallel()
	ft := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = recover() }()
		poll.Eventually(ft, "the moon", func() bool { return false }, poll.Within(10*time.Millisecond))
	}()
	<-done
	if ft.msg != "timed out waiting for the moon" {
		t.Fatalf("failure message = %q", ft.msg)
	}
}

// fatalRecorder records Fatalf instead of ending the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = format
	if len(args) > 0 {
		f.msg = sprintf(format, args...)
	}
	panic("fatal")
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
