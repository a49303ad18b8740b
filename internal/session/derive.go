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

// deriveAppended extends the derived history with a newly appended node.
func (l *Log) deriveAppended(msg *llm.Message) {
	if msg != nil {
		l.derived = append(l.derived, *msg)
	}
}

// deriveRebuild recomputes the derived history after a replacement changed
// ReplaceGeneration.
func (l *Log) deriveRebuild() {
	l.derived = l.derived[:0]
	for _, seq := range l.surface.nodes {
		if m := l.records[seq].msg; m != nil {
			l.derived = append(l.derived, *m)
		}
	}
}
