package replica

import "sync"

// outbox is the FIFO of live notifications waiting to be sent. It is
// bounded: past outboxMax entries the newest are dropped (and counted),
// since the sender is only behind when the database is.
type outbox struct {
	mu      sync.Mutex
	items   []string
	wake    chan struct{}
	closed  bool
	dropped uint64
}

const outboxMax = 1 << 16

func newOutbox() *outbox { return &outbox{wake: make(chan struct{}, 1)} }

func (o *outbox) put(s string) {
	o.mu.Lock()
	if o.closed || len(o.items) >= outboxMax {
		o.dropped++
		o.mu.Unlock()
		return
	}
	o.items = append(o.items, s)
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// take waits for entries and returns them (reusing buf); false once
// closed.
func (o *outbox) take(buf []string) ([]string, bool) {
	for {
		o.mu.Lock()
		if o.closed {
			o.mu.Unlock()
			return nil, false
		}
		if len(o.items) > 0 {
			buf = append(buf[:0], o.items...)
			clear(o.items)
			o.items = o.items[:0]
			o.mu.Unlock()
			return buf, true
		}
		o.mu.Unlock()
		<-o.wake
	}
}

func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}
