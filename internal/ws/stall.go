package ws

import (
	"sync/atomic"
	"time"
)

// stallWatch tells a client that stopped reading from one that reads
// slowly: a connection is stalled when its socket has taken nothing of its
// frames for the timeout while its send queue grew since the previous
// check. A slow reader makes progress and is not stalled; an idle reader of
// a quiet session has no growing queue and is not stalled either.
type stallWatch struct {
	timeout time.Duration
	// progress is when the socket last took bytes (unix ns).
	progress atomic.Int64
	// queued is the queue's size at the previous check (checker only).
	queued int64
}

func newStallWatch(timeout time.Duration, now time.Time) *stallWatch {
	w := &stallWatch{timeout: timeout}
	w.wrote(now)
	return w
}

// wrote records write progress.
func (w *stallWatch) wrote(now time.Time) { w.progress.Store(now.UnixNano()) }

// stalled checks the connection at now with queued bytes waiting.
func (w *stallWatch) stalled(now time.Time, queued int64) bool {
	grew := queued > w.queued
	w.queued = queued
	return grew && now.Sub(time.Unix(0, w.progress.Load())) > w.timeout
}
