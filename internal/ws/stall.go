package ws

import (
	"sync/atomic"
	"time"
)

// stallWatch tells a client that stopped reading from one that reads
// slowly: a connection is stalled when its socket has taken nothing of its
// frames for the timeout while its send queue grew meanwhile. A slow
// reader makes progress and is not stalled; an idle reader of a quiet
// session has no growing queue and is not stalled either.
type stallWatch struct {
	timeout time.Duration
	// progress is when the socket last took bytes (unix ns).
	progress atomic.Int64
	// The checker's own: the progress it saw last, and the queue's size
	// at its first check after that progress.
	seen, base int64
}

func newStallWatch(timeout time.Duration, now time.Time) *stallWatch {
	w := &stallWatch{timeout: timeout}
	w.wrote(now)
	return w
}

// wrote records write progress.
func (w *stallWatch) wrote(now time.Time) { w.progress.Store(now.UnixNano()) }

// check looks at the connection at now with queued bytes waiting: growing
// is whether the queue grew since the socket last took bytes, stalled
// whether it did so and that was longer than the timeout ago.
func (w *stallWatch) check(now time.Time, queued int64) (growing, stalled bool) {
	if p := w.progress.Load(); p != w.seen {
		w.seen, w.base = p, queued
	}
	growing = queued > w.base
	return growing, growing && now.Sub(time.Unix(0, w.seen)) > w.timeout
}
