package session

import "harness/internal/llm"

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
}
