package render

import (
	"strings"

	"harness/internal/llm"
	"harness/internal/session"
)

// CompactionTrigger says what started a compaction.
type CompactionTrigger string

const (
	// CompactionManual: /compact between turns (compaction/start turn null).
	CompactionManual CompactionTrigger = "manual"
	// CompactionAutomatic: context pressure or overflow inside a turn.
	CompactionAutomatic CompactionTrigger = "automatic"
)

// CompactionItem marks where the history was compacted: the summary that
// replaced the older items, shown collapsed. It is built from the
// compaction/summary event; the checkpoint message that follows it shows
// nothing of its own.
type CompactionItem struct {
	Base
	// Trigger is "" when the compaction/start is not at hand.
	Trigger CompactionTrigger
	// Replaced is how many history items the summary replaced and Tokens
	// their estimated size.
	Replaced int
	Tokens   int64
	// SummaryHTML is the summary rendered as sanitised markdown.
	SummaryHTML string
}

// compactionID is a marker's DOM id.
func compactionID(seq int64) string { return seqID("c", seq) }

// CompactionMarker is the marker of a compaction/summary event.
func (m *Markdown) CompactionMarker(base Base, cs session.CompactionSummary, trigger CompactionTrigger) *CompactionItem {
	var sb strings.Builder
	for _, b := range cs.Summary {
		if b.Type == llm.BlockText {
			sb.WriteString(b.Text)
		}
	}
	return &CompactionItem{
		Base: withID(base, compactionID(base.Seq)), Trigger: trigger,
		Replaced: len(cs.ShadowedSeqs), Tokens: cs.ShadowedTokenCount,
		SummaryHTML: m.Render(sb.String()),
	}
}

// triggerOf is the trigger a compaction/start records.
func triggerOf(cs session.CompactionStart) CompactionTrigger {
	if cs.Turn == nil {
		return CompactionManual
	}
	return CompactionAutomatic
}

// maxTriggerScan bounds the look-back from a live compaction/summary to
// its compaction/start (only injected context lands between them).
const maxTriggerScan = 4096

// compactionTrigger finds the trigger of a live compaction in the log.
func (r *Renderer) compactionTrigger(sessionID string, from int64, id string) CompactionTrigger {
	if r.logs == nil {
		return ""
	}
	l, ok := r.logs(sessionID)
	if !ok {
		return ""
	}
	for seq := from - 1; seq >= 0 && seq >= from-maxTriggerScan; seq-- {
		ev, ok := l.Event(seq)
		if !ok {
			return ""
		}
		if ev.Type != session.TypeCompactionStart {
			continue
		}
		if cs, err := session.Decode[session.CompactionStart](ev); err == nil && cs.CompactionID == id {
			return triggerOf(cs)
		}
	}
	return ""
}

// compactionLabel is the marker's one-line description.
func compactionLabel(v *CompactionItem) string {
	return plural(v.Replaced, "item", "items") + ", ~" + tokens(v.Tokens) + " tokens summarized"
}
