package ws

import (
	"context"
	"errors"
	"sync"

	"harness/internal/session"
)

// item is one frame waiting to be written. Event frames of subscribers
// that asked for HTML carry the event and subscription; the writer renders
// them, so rendering never runs on the goroutine that appended the event.
type item struct {
	frame []byte
	seq   int64 // event seq for session/event frames, else -1
	ev    *session.Event
	sub   *subscription
}

var errQueueClosed = errors.New("send queue closed")

// sendQueue is a connection's bounded FIFO of frames. Live frames use push,
// which never waits and fails when the queue is full (the connection is
// then a slow consumer); replay uses pushWait, which waits until the queue
// is below half full, leaving the other half to live frames.
type sendQueue struct {
	mu     sync.Mutex
	buf    []item // ring; grows on demand up to max
	max    int
	head   int
	n      int
	closed bool
	ready  chan struct{} // wakes the writer; capacity 1
	// space is closed (and replaced) when room frees up below half while
	// pushWait callers wait; waiting counts them.
	space   chan struct{}
	waiting int
}

func newSendQueue(capacity int) *sendQueue {
	return &sendQueue{
		buf:   make([]item, min(capacity, 16)),
		max:   capacity,
		ready: make(chan struct{}, 1),
		space: make(chan struct{}),
	}
}

// push appends it without waiting; false when full or closed.
func (q *sendQueue) push(it item) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.n == q.max {
		return false
	}
	q.appendLocked(it)
	return true
}

// pushWait appends it once the queue is below half full.
func (q *sendQueue) pushWait(ctx context.Context, it item) error {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return errQueueClosed
		}
		if q.n < max(q.max/2, 1) {
			q.appendLocked(it)
			q.mu.Unlock()
			return nil
		}
		space := q.space
		q.waiting++
		q.mu.Unlock()
		select {
		case <-space:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (q *sendQueue) appendLocked(it item) {
	if q.n == len(q.buf) {
		grown := make([]item, min(2*len(q.buf), q.max))
		for i := range q.n {
			grown[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = grown, 0
	}
	q.buf[(q.head+q.n)%len(q.buf)] = it
	q.n++
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// pop waits for the next item.
func (q *sendQueue) pop(ctx context.Context) (item, error) {
	for {
		q.mu.Lock()
		if q.n > 0 {
			it := q.buf[q.head]
			q.buf[q.head] = item{}
			q.head = (q.head + 1) % len(q.buf)
			q.n--
			if q.waiting > 0 && q.n < max(q.max/2, 1) {
				close(q.space)
				q.space = make(chan struct{})
				q.waiting = 0
			}
			q.mu.Unlock()
			return it, nil
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return item{}, errQueueClosed
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
			return item{}, ctx.Err()
		}
	}
}

// close refuses further items and wakes everyone; queued items are dropped.
func (q *sendQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.closed = true
	q.n = 0
	clear(q.buf)
	close(q.space)
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// len is the number of queued items.
func (q *sendQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}
