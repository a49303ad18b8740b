package render

import (
	"sync"

	"harness/internal/llm"
	"harness/internal/session"
)

// Streaming markdown previews. While a text block streams, the browser
// shows the raw deltas at once and, at most once per interval, the block's
// markdown rendered by the server. Which deltas carry a preview is decided
// from the log alone (a delta at least one interval after the previous
// preview point, in event time), so every tab and every reconnect sees the
// same previews, and a block's text is accumulated once for all viewers.

type previewKey struct {
	session           string
	turn, step, index int
}

// blockAcc is one streaming block's text as folded so far.
type blockAcc struct {
	mu        sync.Mutex
	upto      int64 // last seq folded
	text      []byte
	lastPoint int64            // event time of the last preview point
	points    map[int64]int    // seq → text length at that preview point
	html      map[int64]string // rendered previews, the latest few
}

type previewCache struct {
	mu    sync.Mutex
	max   int
	m     map[previewKey]*blockAcc
	order []previewKey
}

func newPreviewCache(n int) *previewCache {
	return &previewCache{max: n, m: map[previewKey]*blockAcc{}}
}

func (c *previewCache) get(k previewKey) (*blockAcc, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.m[k]
	return a, ok
}

// add stores a, or returns the accumulator another caller stored first.
func (c *previewCache) add(k previewKey, a *blockAcc) *blockAcc {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[k]; ok {
		return old
	}
	c.m[k] = a
	c.order = append(c.order, k)
	for len(c.order) > c.max {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	return a
}

func (c *previewCache) forget(k previewKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, k)
}

// forgetStep drops every block of a step (message complete or retried).
func (c *previewCache) forgetStep(s string, turn, step int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if k.session == s && k.turn == turn && k.step == step {
			delete(c.m, k)
		}
	}
}

// preview returns the markdown preview a text delta carries, if it is a
// preview point.
func (r *Renderer) preview(sessionID string, ev session.Event, c session.AssistantChunk) (string, bool) {
	if r.logs == nil {
		return "", false
	}
	l, ok := r.logs(sessionID)
	if !ok {
		return "", false
	}
	k := previewKey{sessionID, c.Turn, c.Step, c.Chunk.Index}
	acc, ok := r.previews.get(k)
	if !ok {
		start, ok := findBlockStart(l, ev.Seq, c)
		if !ok {
			return "", false
		}
		acc = r.previews.add(k, &blockAcc{upto: start.Seq, lastPoint: start.Time, points: map[int64]int{}, html: map[int64]string{}})
	}
	acc.mu.Lock()
	defer acc.mu.Unlock()
	if ev.Seq > acc.upto {
		r.extend(l, acc, k, ev.Seq)
	}
	n, ok := acc.points[ev.Seq]
	if !ok {
		return "", false
	}
	if h, ok := acc.html[ev.Seq]; ok {
		return h, true
	}
	h := r.md.Render(string(acc.text[:n]))
	acc.html[ev.Seq] = h
	for len(acc.html) > 4 {
		oldest := ev.Seq
		for s := range acc.html {
			oldest = min(oldest, s)
		}
		delete(acc.html, oldest)
	}
	return h, true
}

// extend folds the block's deltas up to seq into acc (acc.mu held).
func (r *Renderer) extend(l *session.Log, acc *blockAcc, k previewKey, seq int64) {
	const page = 512
	for from := acc.upto + 1; from <= seq; from += page {
		for _, ev := range l.Events(from, min(from+page, seq+1)) {
			acc.upto = ev.Seq
			if ev.Type != session.TypeAssistantChunk {
				continue
			}
			c, err := session.Decode[session.AssistantChunk](ev)
			if err != nil || c.Chunk.Type != llm.ChunkTextDelta || c.Turn != k.turn || c.Step != k.step || c.Chunk.Index != k.index {
				continue
			}
			acc.text = append(acc.text, c.Chunk.Text...)
			if ev.Time-acc.lastPoint >= r.interval {
				acc.points[ev.Seq] = len(acc.text)
				acc.lastPoint = ev.Time
			}
		}
	}
}

// findBlockStart walks back from a delta to its block-start chunk. Other
// events may interleave with a stream (a message queued meanwhile); a step
// or turn boundary ends the search.
func findBlockStart(l *session.Log, seq int64, c session.AssistantChunk) (session.Event, bool) {
	for s := seq - 1; s >= 0; s-- {
		ev, ok := l.Event(s)
		if !ok {
			return session.Event{}, false
		}
		switch ev.Type {
		case session.TypeAssistantChunk:
		case session.TypeStepStart, session.TypeTurnStart, session.TypeAssistantMessage:
			return session.Event{}, false
		default:
			continue
		}
		bc, err := session.Decode[session.AssistantChunk](ev)
		if err != nil || bc.Turn != c.Turn || bc.Step != c.Step {
			return session.Event{}, false
		}
		if bc.Chunk.Type == llm.ChunkBlockStart && bc.Chunk.Index == c.Chunk.Index {
			return ev, true
		}
	}
	return session.Event{}, false
}
