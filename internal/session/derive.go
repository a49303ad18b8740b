package session

import (
	"sync"

	"harness/internal/llm"
)

// DeriveMessages returns the model-visible history (§1.5): the projection of
// every surface node in order. Each node is decoded once, when it is
// appended; a replacement rebuilds the list from those cached projections.
// The slice is fresh on every call; the messages' Content slices are shared
// with the log and must not be modified.
func (l *Log) DeriveMessages() []llm.Message {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return append(make([]llm.Message, 0, len(l.derived)), l.derived...)
}

// History is DeriveMessages without the copy: a read-only view that shares
// the log's backing array (capacity capped, so later appends never show
// through; a replacement rebuilds into a new array, so the view never
// changes). Callers must not modify it. Hot paths use it: a long session's
// history is large and every step reads it.
func (l *Log) History() []llm.Message {
	l.mu.RLock()
	defer l.mu.RUnlock()
	n := len(l.derived)
	return l.derived[:n:n]
}

// HistoryWire is History plus a cache of the history's provider encodings
// bound to that view: a request built from it encodes each message once in
// the session's life, not once per request.
func (l *Log) HistoryWire() ([]llm.Message, llm.WireCache) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	n := len(l.derived)
	return l.derived[:n:n], &wireView{w: &l.wire, msgs: l.derived[:n:n], gen: l.derivedGen}
}

// deriveAppended extends the derived history with a newly appended node.
func (l *Log) deriveAppended(msg *llm.Message) {
	if msg != nil {
		l.derived = append(l.derived, *msg)
	}
}

// deriveRebuild recomputes the derived history after a replacement changed
// ReplaceGeneration.
func (l *Log) deriveRebuild() {
	// A new array: views handed out by History keep the old one.
	l.derived = make([]llm.Message, 0, len(l.surface.nodes))
	for _, seq := range l.surface.nodes {
		if m := l.records[seq].msg; m != nil {
			l.derived = append(l.derived, *m)
		}
	}
	l.derivedGen++
}

// wireStore holds, per provider dialect, the joined encodings of a prefix
// of the derived history. Between replacements the history only grows, so
// each request extends the prefix with what is new; a replacement starts a
// new generation and the next request encodes the history again. It has
// its own lock: requests read it while the log appends.
type wireStore struct {
	mu       sync.Mutex
	variants map[string]*wirePrefix
}

// wirePrefix is the encoding of derived[:len(ends)] of generation gen: one
// comma-separated run; ends[i] is its length once message i is in.
type wirePrefix struct {
	gen    uint64
	ends   []int
	joined []byte
}

// wireView is a WireCache over one History view.
type wireView struct {
	w    *wireStore
	msgs []llm.Message
	gen  uint64
}

// Encoded implements llm.WireCache.
func (v *wireView) Encoded(variant string, encode func(llm.Message) ([]byte, error)) ([][]byte, error) {
	v.w.mu.Lock()
	defer v.w.mu.Unlock()
	p := v.w.variants[variant]
	switch {
	case p == nil || p.gen < v.gen:
		p = &wirePrefix{gen: v.gen}
		if v.w.variants == nil {
			v.w.variants = map[string]*wirePrefix{}
		}
		v.w.variants[variant] = p
	case p.gen > v.gen:
		// A view older than a replacement: encode it on its own.
		return encodeAll(v.msgs, encode)
	}
	for _, m := range v.msgs[min(len(p.ends), len(v.msgs)):] {
		b, err := encode(m)
		if err != nil {
			return nil, err
		}
		if len(b) > 0 {
			if len(p.joined) > 0 {
				p.joined = append(p.joined, ',')
			}
			p.joined = append(p.joined, b...)
		}
		p.ends = append(p.ends, len(p.joined))
	}
	n := 0
	if len(v.msgs) > 0 {
		n = p.ends[len(v.msgs)-1]
	}
	// Capped: later appends never show through this request's segment.
	return [][]byte{p.joined[:n:n]}, nil
}

func encodeAll(msgs []llm.Message, encode func(llm.Message) ([]byte, error)) ([][]byte, error) {
	out := make([][]byte, 0, len(msgs))
	for _, m := range msgs {
		b, err := encode(m)
		if err != nil {
			return nil, err
		}
		if len(b) > 0 {
			out = append(out, b)
		}
	}
	return out, nil
}
