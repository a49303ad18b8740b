package ws

import (
	"context"
	"errors"
	"sync"
)

// item is one frame waiting to be written: ready bytes, or for a
// subscriber that asked for batches, the projected events of one fan-out
// that the writer joins with the events queued right behind them into one
// session/events frame. Nothing in an item is rendered or decoded by the writer.
type item struct {
	frame []byte
	seq   int64         // event seq for event items (the last of a run), else -1
	first int64         // the first seq of run
	run   *liveRun      // batch subscribers' events (frame is nil)
	sub   *subscription // the batch subscriber of run
	// end, when set, is no frame: the writer closes the socket with it
	// once everything queued before it is written.
	end *closeNote
	// flush, when set, is no frame either: the writer sends what a
	// direct write (sendQueue.direct) left of its frame on the wire.
	flush bool
}

// size is what the item counts against the connection's byte bound.
func (it item) size() int64 {
	if it.run != nil {
		return it.run.size
	}
	return int64(len(it.frame))
}

var errQueueClosed = errors.New("send queue closed")

// sendQueue is a connection's FIFO of frames, bounded in bytes (not
// frames): a subscriber that falls behind a burst of small deltas keeps
// them queued (and gets them coalesced, when it asked for batches) instead
// of being cut. Live frames use offer, which never waits and fails past the
// bound (the connection is then a slow consumer); replay uses pushWait,
// which waits until the queue is below half the bound, leaving the other
// half to live frames.
type sendQueue struct {
	mu     sync.Mutex
	buf    []item // ring; grows on demand
	head   int
	n      int
	bytes  int64 // queued bytes
	max    int64 // bound in bytes
	closed bool
	ready  chan struct{} // wakes the writer; capacity 1
	// space is closed (and replaced) when room frees up below half while
	// pushWait callers wait; waiting counts them.
	space   chan struct{}
	waiting int
	// busy: the writer holds items it popped and has not written yet.
	busy bool
	// direct, when set, writes items on the socket if it takes them
	// without waiting (wire.tryFrames): items that find the queue empty
	// and the writer idle go out from the offering goroutine, all in one
	// system call, which saves waking the writer for every frame of a
	// viewer that keeps up. It reports how many went out whole; partial:
	// the next one went out in part, the rest waits on the wire and a
	// flush item behind it sends it.
	direct func([]item) (sent int, partial bool)
}

func newSendQueue(maxBytes int64, direct func([]item) (sent int, partial bool)) *sendQueue {
	return &sendQueue{
		direct: direct,
		buf:    make([]item, 16),
		max:    maxBytes,
		ready:  make(chan struct{}, 1),
		space:  make(chan struct{}),
	}
}

// maxDirect is the most frames one direct write sends.
const maxDirect = 32

// offer queues items, in order, without waiting. Items finding the queue
// empty and the writer idle are first tried on the socket directly; order
// holds, as a direct write happens only when nothing is queued or being
// written. written is how many went out that way (or are owned by the
// wire: see direct). refused: the queue is closed, or an item would have
// taken it past its bound (a frame alone larger than the bound is still
// accepted into an empty queue); that item and the ones after it are
// dropped, and the connection is a slow consumer.
func (q *sendQueue) offer(items ...item) (written int, refused bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return 0, true
	}
	if q.n == 0 && !q.busy && q.direct != nil {
		for len(items) > 0 {
			k := 0
			for k < len(items) && k < maxDirect && items[k].end == nil {
				k++
			}
			if k == 0 {
				break
			}
			sent, partial := q.direct(items[:k])
			written, items = written+sent, items[sent:]
			if partial {
				written, items = written+1, items[1:]
				q.appendLocked(item{flush: true, seq: -1})
				break
			}
			if sent < k { // the socket is full: the rest waits for the writer
				break
			}
		}
	}
	for _, it := range items {
		if q.n > 0 && q.bytes+it.size() > q.max {
			return written, true
		}
		q.appendLocked(it)
	}
	return written, false
}

// pushWait appends it once the queue is below half its bound.
func (q *sendQueue) pushWait(ctx context.Context, it item) error {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return errQueueClosed
		}
		if q.n == 0 || q.bytes < q.max/2 {
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
		grown := make([]item, 2*len(q.buf))
		for i := range q.n {
			grown[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = grown, 0
	}
	q.buf[(q.head+q.n)%len(q.buf)] = it
	q.n++
	q.bytes += it.size()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// popRun waits for the next item and returns it with the items right
// behind it that join it (join(first, next) true), at most maxItems and
// about maxBytes in all.
func (q *sendQueue) popRun(ctx context.Context, join func(first, next item) bool, maxItems int, maxBytes int64) ([]item, error) {
	for {
		q.mu.Lock()
		q.busy = false // what the writer popped before is written
		if q.n > 0 {
			q.busy = true
			out := []item{q.takeLocked()}
			size := out[0].size()
			for q.n > 0 && len(out) < maxItems && size < maxBytes && join != nil && join(out[0], q.buf[q.head]) {
				it := q.takeLocked()
				size += it.size()
				out = append(out, it)
			}
			if q.waiting > 0 && q.bytes < q.max/2 {
				close(q.space)
				q.space = make(chan struct{})
				q.waiting = 0
			}
			q.mu.Unlock()
			return out, nil
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return nil, errQueueClosed
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (q *sendQueue) takeLocked() item {
	it := q.buf[q.head]
	q.buf[q.head] = item{}
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	q.bytes -= it.size()
	if q.n == 0 && len(q.buf) > 1024 {
		// A burst grew the ring; do not keep it for the connection's life.
		q.buf, q.head = make([]item, 16), 0
	}
	return it
}

// close refuses further items and wakes everyone; queued items are dropped.
func (q *sendQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.closed = true
	q.n, q.bytes = 0, 0
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

// size is the number of queued bytes.
func (q *sendQueue) size() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes
}
