package compact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"harness/internal/llm"
	"harness/internal/session"
)

// PruneMarker replaces the middle of a pruned tool result.
const PruneMarker = "\n\n[... tool result middle pruned ...]\n\n"

// PruneResult says what one pruning pass replaced.
type PruneResult struct {
	Pruned       int   `json:"pruned"`       // tool results replaced
	CharsRemoved int   `json:"charsRemoved"` // code points removed
	TokensSaved  int64 `json:"tokensSaved"`  // heuristic tokens saved
}

// Pruner shortens oversized tool results on a session's surface (upstream
// §6.5): it keeps the head and the tail of their text and puts PruneMarker
// in the middle. It never calls a model.
type Pruner struct {
	opts PrunerOptions
}

// NewPruner returns a pruner; zero fields take the defaults.
func NewPruner(opts PrunerOptions) (*Pruner, error) {
	opts = opts.withDefaults()
	if opts.HeadChars+utf8.RuneCountInString(PruneMarker)+opts.TailChars > opts.ThresholdChars {
		return nil, fmt.Errorf("compact: pruner head %d + marker + tail %d exceed the threshold %d",
			opts.HeadChars, opts.TailChars, opts.ThresholdChars)
	}
	return &Pruner{opts: opts}, nil
}

// textChars counts the code points of the text blocks; other blocks cost
// nothing.
func textChars(blocks []llm.ContentBlock) int {
	n := 0
	for _, b := range blocks {
		if b.Type == llm.BlockText {
			n += utf8.RuneCountInString(b.Text)
		}
	}
	return n
}

// PruneContent returns the pruned form of a tool result's content, or false
// when its text is within the threshold. Non-text blocks stay in place; the
// marker is inserted once, in the first text block the removed span touches.
func (p *Pruner) PruneContent(blocks []llm.ContentBlock) ([]llm.ContentBlock, bool) {
	total := textChars(blocks)
	if total <= p.opts.ThresholdChars {
		return nil, false
	}
	cutStart, cutEnd := p.opts.HeadChars, total-p.opts.TailChars
	out := make([]llm.ContentBlock, 0, len(blocks))
	consumed, marked := 0, false
	for _, b := range blocks {
		if b.Type != llm.BlockText {
			out = append(out, b)
			continue
		}
		runes := []rune(b.Text)
		start, end := consumed, consumed+len(runes)
		consumed = end
		if end <= cutStart || start >= cutEnd {
			out = append(out, b)
			continue
		}
		head := runes[:clamp(cutStart-start, 0, len(runes))]
		tail := runes[clamp(cutEnd-start, 0, len(runes)):]
		text := string(head)
		if !marked {
			text += PruneMarker
			marked = true
		}
		text += string(tail)
		if text != "" {
			b.Text = text
			out = append(out, b)
		}
	}
	return out, true
}

func clamp(v, lo, hi int) int { return max(lo, min(v, hi)) }

// PruneLog replaces every oversized tool result on l's current surface. For
// each, it appends compaction/prune (pricing the shadowed node) immediately
// followed by the replacing tool/result: replace{seq,seq}, sourceEventSeqs
// [seq], the data identical except the inner content. Replacements landed
// before an error stay. It must run inside an open turn (upstream's
// invariant for tool/result replacements).
func (p *Pruner) PruneLog(l *session.Log) (PruneResult, error) {
	var res PruneResult
	for _, seq := range l.Surface() {
		ev, ok := l.Event(seq)
		if !ok || ev.Type != session.TypeToolResult {
			continue
		}
		tr, err := session.Decode[session.ToolResult](ev)
		if err != nil || len(tr.Message.Content) != 1 {
			continue // the log validated it; nothing sensible to prune
		}
		old := tr.Message.Content[0].Content
		pruned, ok := p.PruneContent(old)
		if !ok {
			continue
		}
		data, err := replaceResultContent(ev.Data, pruned)
		if err != nil {
			return res, fmt.Errorf("prune tool result %d: %w", seq, err)
		}
		before := EstimateMessage(tr.Message)
		// The marker and its replacing result go in together: nothing may
		// land between them.
		if _, err := l.AppendGroup(func(int64) ([]session.Draft, error) {
			return []session.Draft{
				{Type: session.TypeCompactionPrune, Data: session.CompactionPrune{
					ShadowedRange:      session.SeqRange{Start: seq, End: seq},
					ShadowedSeqs:       []int64{seq},
					ShadowedTokenCount: before,
				}},
				{Type: session.TypeToolResult, Data: data, SurfaceOp: session.Replace(seq, seq), SourceEventSeqs: []int64{seq}},
			}, nil
		}); err != nil {
			return res, fmt.Errorf("prune tool result %d: %w", seq, err)
		}
		after := tr.Message
		after.Content = []llm.ContentBlock{tr.Message.Content[0]}
		after.Content[0].Content = pruned
		res.Pruned++
		res.CharsRemoved += textChars(old) - textChars(pruned)
		res.TokensSaved += before - EstimateMessage(after)
	}
	return res, nil
}

// replaceResultContent rewrites message.content[0].content of a stored
// tool/result on generic JSON, so every other field, known to this package
// or not, stays byte-for-byte equal in meaning.
func replaceResultContent(raw []byte, content []llm.ContentBlock) ([]byte, error) {
	var data map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&data); err != nil {
		return nil, err
	}
	msg, ok := data["message"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("tool/result without a message object")
	}
	blocks, ok := msg["content"].([]any)
	if !ok || len(blocks) != 1 {
		return nil, fmt.Errorf("tool/result message without exactly one block")
	}
	block, ok := blocks[0].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("tool/result block is not an object")
	}
	block["content"] = content
	return marshalJSON(data)
}
