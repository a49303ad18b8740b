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

// compactionLabel is the marker's one-line description.
func compactionLabel(v *CompactionItem) string {
	return plural(v.Replaced, "item", "items") + ", ~" + tokens(v.Tokens) + " tokens summarized"
}
