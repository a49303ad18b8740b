package ws

import "sync"

// mailbox is an unbounded FIFO that producers fill without blocking (they
// may run under an agent's lock or in an HTTP handler) and one worker
// drains in batches. Topics and the access worker use it.
type mailbox[T any] struct {
	mu     sync.Mutex
	items  []T
	closed bool
	wake   chan struct{} // capacity 1: a pending wake-up
	done   chan struct{} // closed by close
}

func newMailbox[T any]() *mailbox[T] {
	return &mailbox[T]{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// put appends v and wakes the worker; after close it drops v.
func (m *mailbox[T]) put(v T) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.items = append(m.items, v)
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// take waits for items and returns them all, reusing buf's array; ok is
// false once the mailbox is closed or stop is closed.
func (m *mailbox[T]) take(buf []T, stop <-chan struct{}) (batch []T, ok bool) {
	select {
	case <-m.done:
		return nil, false
	case <-stop:
		return nil, false
	case <-m.wake:
	}
	m.mu.Lock()
	batch, m.items = m.items, buf[:0]
	m.mu.Unlock()
	return batch, true
}

// close drops what is queued and ends take; later puts are dropped.
func (m *mailbox[T]) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.closed = true
	m.items = nil
	close(m.done)
}
