package ws

import (
	"testing"
	"time"
)

// Only a client whose socket took nothing for the timeout while its queue
// grew is stalled: a slow reader that makes progress, an idle reader of a
// quiet session (queue empty, or not growing) are not.
func TestStallWatch(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	const timeout = time.Minute
	type check struct {
		at     time.Duration // after t0
		wrote  bool          // the socket took bytes just before the check
		queued int64
		want   bool
	}
	cases := []struct {
		name   string
		checks []check
	}{
		{"stopped reading while the queue grows", []check{
			{at: 10 * time.Second, queued: 100},
			{at: 50 * time.Second, queued: 200},
			{at: 61 * time.Second, queued: 300, want: true},
		}},
		{"slow but progressing", []check{
			{at: 30 * time.Second, queued: 100},
			{at: 59 * time.Second, wrote: true, queued: 200},
			{at: 90 * time.Second, queued: 300},
			{at: 118 * time.Second, wrote: true, queued: 400},
			{at: 150 * time.Second, queued: 500},
		}},
		{"quiet session: the queue does not grow", []check{
			{at: 10 * time.Second, queued: 100},
			{at: 70 * time.Second, queued: 100},
			{at: 600 * time.Second, queued: 100},
		}},
		{"idle reader: nothing queued", []check{
			{at: 70 * time.Second},
			{at: time.Hour},
		}},
		{"the queue grew during the stall, then stopped", []check{
			{at: 10 * time.Second, queued: 100},
			{at: 20 * time.Second, queued: 200},
			{at: 70 * time.Second, queued: 200, want: true},
		}},
		{"the writer took a frame but its write is stuck", []check{
			{at: 30 * time.Second, queued: 500},
			{at: 70 * time.Second, queued: 400},
			{at: 80 * time.Second, queued: 450},
			{at: 90 * time.Second, queued: 600, want: true},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newStallWatch(timeout, t0)
			for i, k := range c.checks {
				now := t0.Add(k.at)
				if k.wrote {
					w.wrote(now.Add(-time.Millisecond))
				}
				if _, got := w.check(now, k.queued); got != k.want {
					t.Fatalf("check %d at %s with %d queued: stalled %v, want %v", i, k.at, k.queued, got, k.want)
				}
			}
		})
	}
}
