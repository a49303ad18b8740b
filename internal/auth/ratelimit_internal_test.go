package auth

import (
	"testing"
	"time"
)

func TestLimiterWindow(t *testing.T) {
	t.Parallel()
	l := newLimiter(3, time.Minute)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	steps := []struct {
		sec      int
		op       string // "fail", "check", "reset"
		key      string
		wantWait time.Duration
	}{
		{0, "fail", "a", 0},
		{10, "fail", "a", 0},
		{20, "check", "a", 0},
		{20, "fail", "a", 0},
		{30, "check", "a", 30 * time.Second}, // oldest (0s) leaves at 60s
		{30, "check", "b", 0},                // keys are independent
		{60, "check", "a", 0},                // 0s left the window
		{60, "fail", "a", 0},
		{61, "check", "a", 9 * time.Second}, // now 10s, 20s, 60s
		{61, "reset", "a", 0},
		{61, "check", "a", 0},
	}
	for i, s := range steps {
		switch s.op {
		case "fail":
			l.fail(at(s.sec), s.key)
		case "reset":
			l.reset(s.key)
		case "check":
			if got := l.check(at(s.sec), s.key); got != s.wantWait {
				t.Errorf("step %d: check(%s) at %ds = %v, want %v", i, s.key, s.sec, got, s.wantWait)
			}
		}
	}
	// The sweep drops keys that nobody asks about again.
	l.fail(at(100), "c")
	l.check(at(1000), "d")
	if n := len(l.fails); n != 0 {
		t.Fatalf("after sweep %d keys remain", n)
	}
}
