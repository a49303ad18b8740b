package auth

import (
	"sync"
	"time"
)

// limiter counts failed logins per key in a sliding window. It is in
// memory: a restart forgets the counts, which only helps a user who mistyped.
// A key holds at most max timestamps because attempts over the limit are
// refused before they are counted, and idle keys are swept every window.
type limiter struct {
	mu      sync.Mutex
	max     int
	window  time.Duration
	fails   map[string][]time.Time
	sweepAt time.Time
}

func newLimiter(max int, window time.Duration) *limiter {
	return &limiter{max: max, window: window, fails: map[string][]time.Time{}}
}

// check returns how long to wait before any of keys may try again; zero
// means the attempt may proceed.
func (l *limiter) check(now time.Time, keys ...string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	var wait time.Duration
	for _, k := range keys {
		ts := l.prune(now, k)
		if len(ts) >= l.max {
			if w := ts[0].Add(l.window).Sub(now); w > wait {
				wait = w
			}
		}
	}
	return wait
}

// fail counts a failed attempt against every key.
func (l *limiter) fail(now time.Time, keys ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		l.fails[k] = append(l.prune(now, k), now)
	}
}

// reset forgets a key's failures (a successful login).
func (l *limiter) reset(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.fails, key)
}

// prune drops key's failures that left the window; the caller holds mu.
func (l *limiter) prune(now time.Time, key string) []time.Time {
	ts := l.fails[key]
	i := 0
	for i < len(ts) && !ts[i].After(now.Add(-l.window)) {
		i++
	}
	if i == len(ts) {
		delete(l.fails, key)
		return nil
	}
	ts = ts[i:]
	l.fails[key] = ts
	return ts
}

// sweep prunes every key once per window so keys that are never asked
// about again do not accumulate; the caller holds mu.
func (l *limiter) sweep(now time.Time) {
	if now.Before(l.sweepAt) {
		return
	}
	for k := range l.fails {
		l.prune(now, k)
	}
	l.sweepAt = now.Add(l.window)
}
