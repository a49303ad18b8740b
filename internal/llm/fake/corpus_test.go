package fake

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"harness/internal/llm"
)

// maxReplayGap caps a pause taken from recorded timestamps: recordings
// normalise some times, which shows as gaps of days.
const maxReplayGap = 2 * time.Second

// CorpusMessage is one assistant message of a recorded DeepSeek Harness
// session log, with a Reply that streams the deltas the model sent for it,
// with their original pacing.
type CorpusMessage struct {
	Seq     int64
	Turn    int
	Step    int
	Message llm.Message
	Usage   *llm.Usage
	// Finish is the recorded finish reason (stop when none was recorded).
	Finish      llm.FinishReason
	Interrupted bool
	// Chunks are the recorded stream chunks of the message, unpacked.
	Chunks []llm.Chunk
	Reply  Reply
}

// corpusEvent is the subset of a log row the replay reads.
type corpusEvent struct {
	Type            string          `json:"type"`
	Seq             int64           `json:"seq"`
	Time            int64           `json:"time"`
	Seq0            int64           `json:"seq0"`
	Time0           int64           `json:"time0"`
	Data            json.RawMessage `json:"data"`
	SourceEventSeqs []int64         `json:"sourceEventSeqs"`
}

// packedChunks is the data of a reasoning-chunks, text-chunks or
// tool-call-chunks row.
type packedChunks struct {
	Index int      `json:"index"`
	DT    []int64  `json:"dt"`
	Texts []string `json:"texts"`
	Args  []string `json:"args"`
	ID    string   `json:"id"`
	Name  string   `json:"name"`
}

// assistantData covers both recorded shapes of assistant/message data:
// newer rows wrap the message, older rows inline content and provenance.
type assistantData struct {
	Turn        int                `json:"turn"`
	Step        int                `json:"step"`
	Message     *llm.Message       `json:"message"`
	Blocks      []llm.ContentBlock `json:"content"`
	Provenance  *llm.Source        `json:"provenance"`
	Usage       *llm.Usage         `json:"usage"`
	Interrupted bool               `json:"interrupted"`
}

// timedChunk is one unpacked chunk with its log seq and time (ms).
type timedChunk struct {
	seq   int64
	time  int64
	chunk llm.Chunk
}

// LoadCorpus reads a session log (see /work/shared/corpus/README.md) and
// returns its assistant messages in log order, each with a replay Reply.
func LoadCorpus(path string) ([]CorpusMessage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load corpus: %w", err)
	}
	defer f.Close()

	var (
		chunks []timedChunk
		out    []CorpusMessage
		since  int // chunks[since:] are not yet claimed by a message
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		var ev corpusEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("load corpus %s line %d: %w", path, line, err)
		}
		switch ev.Type {
		case "assistant/chunk":
			var d struct {
				Chunk llm.Chunk `json:"chunk"`
			}
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return nil, fmt.Errorf("load corpus %s line %d: %w", path, line, err)
			}
			chunks = append(chunks, timedChunk{ev.Seq, ev.Time, d.Chunk})
		case "reasoning-chunks", "text-chunks", "tool-call-chunks":
			unpacked, err := unpack(ev)
			if err != nil {
				return nil, fmt.Errorf("load corpus %s line %d: %w", path, line, err)
			}
			chunks = append(chunks, unpacked...)
		case "assistant/message":
			m, err := corpusMessage(ev, chunks[since:])
			if err != nil {
				return nil, fmt.Errorf("load corpus %s line %d: %w", path, line, err)
			}
			since = len(chunks)
			out = append(out, m)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("load corpus %s: %w", path, err)
	}
	return out, nil
}

// unpack expands a packed delta row: row k has seq seq0+k and comes dt[k-1]
// ms after row k-1.
func unpack(ev corpusEvent) ([]timedChunk, error) {
	var p packedChunks
	if err := json.Unmarshal(ev.Data, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", ev.Type, err)
	}
	items := p.Texts
	if ev.Type == "tool-call-chunks" {
		items = p.Args
	}
	out := make([]timedChunk, 0, len(items))
	t := ev.Time0
	for k, s := range items {
		if k > 0 && k-1 < len(p.DT) {
			t += p.DT[k-1]
		}
		c := llm.Chunk{Index: p.Index}
		switch ev.Type {
		case "reasoning-chunks":
			c.Type, c.Text = llm.ChunkReasoningDelta, s
		case "text-chunks":
			c.Type, c.Text = llm.ChunkTextDelta, s
		default:
			c.Type, c.ID, c.ArgumentsDelta = llm.ChunkToolCallDelta, p.ID, s
			if k == 0 {
				c.Name = p.Name
			}
		}
		out = append(out, timedChunk{ev.Seq0 + int64(k), t, c})
	}
	return out, nil
}

// corpusMessage builds one message from its event and the chunks logged
// since the previous message (narrowed to sourceEventSeqs when present).
func corpusMessage(ev corpusEvent, pending []timedChunk) (CorpusMessage, error) {
	var d assistantData
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return CorpusMessage{}, fmt.Errorf("assistant/message: %w", err)
	}
	m := CorpusMessage{Seq: ev.Seq, Turn: d.Turn, Step: d.Step, Usage: d.Usage, Interrupted: d.Interrupted}
	switch {
	case d.Message != nil:
		m.Message = *d.Message
	default:
		m.Message = llm.Message{ID: "seq-" + strconv.FormatInt(ev.Seq, 10), Role: llm.RoleAssistant, Content: d.Blocks}
		if d.Provenance != nil {
			m.Message.Source = llm.Source{Kind: llm.SourceModel, Provider: d.Provenance.Provider, Model: d.Provenance.Model}
		}
	}
	if m.Message.Content == nil {
		m.Message.Content = []llm.ContentBlock{}
	}

	var mine []timedChunk
	if len(ev.SourceEventSeqs) > 0 {
		for _, c := range pending {
			if slices.Contains(ev.SourceEventSeqs, c.seq) {
				mine = append(mine, c)
			}
		}
	} else {
		mine = pending
	}
	m.Finish = llm.FinishReason{Kind: llm.FinishStop}
	for _, c := range mine {
		m.Chunks = append(m.Chunks, c.chunk)
		if c.chunk.Type == llm.ChunkFinish && c.chunk.Reason != nil {
			m.Finish = *c.chunk.Reason
		}
	}
	m.Reply = replyFromChunks(mine)
	m.Reply.Name = m.Message.ID
	return m, nil
}

// replyFromChunks turns recorded llm chunks back into wire frames: each
// block keeps its kind, tool calls get wire indexes in first-seen order, and
// a block-end carrying more than its deltas streams the rest.
func replyFromChunks(chunks []timedChunk) Reply {
	type state struct {
		typ      llm.BlockType
		wire     int // tool-call wire index
		streamed strings.Builder
		started  bool // a tool-call fragment with id/name went out
	}
	blocks := map[int]*state{}
	tools := 0
	get := func(i int, t llm.BlockType) *state {
		b, ok := blocks[i]
		if !ok {
			b = &state{typ: t, wire: -1}
			blocks[i] = b
		}
		if b.typ == "" {
			b.typ = t
		}
		if b.typ == llm.BlockToolCall && b.wire < 0 {
			b.wire = tools
			tools++
		}
		return b
	}

	var r Reply
	var last int64
	for i, tc := range chunks {
		var delay time.Duration
		if i > 0 {
			if gap := time.Duration(tc.time-last) * time.Millisecond; gap > 0 && gap <= maxReplayGap {
				delay = gap
			}
		}
		last = tc.time
		c := tc.chunk
		switch c.Type {
		case llm.ChunkBlockStart:
			get(c.Index, c.BlockType)
		case llm.ChunkReasoningDelta, llm.ChunkTextDelta:
			t := llm.BlockText
			if c.Type == llm.ChunkReasoningDelta {
				t = llm.BlockReasoning
			}
			b := get(c.Index, t)
			b.streamed.WriteString(c.Text)
			r.Frames = append(r.Frames, textFrame(b.typ, c.Text, delay))
		case llm.ChunkToolCallDelta:
			b := get(c.Index, llm.BlockToolCall)
			fr := &ToolFragment{Index: b.wire, Arguments: c.ArgumentsDelta}
			if !b.started {
				fr.ID, fr.Name, b.started = c.ID, c.Name, true
			}
			b.streamed.WriteString(c.ArgumentsDelta)
			r.Frames = append(r.Frames, Frame{Delay: delay, Tool: fr})
		case llm.ChunkBlockEnd:
			if c.Block == nil {
				continue
			}
			b := get(c.Index, c.Block.Type)
			if rest := remainder(b.streamed.String(), *c.Block); rest != nil || (b.typ == llm.BlockToolCall && !b.started) {
				if b.typ == llm.BlockToolCall {
					fr := &ToolFragment{Index: b.wire}
					if !b.started {
						fr.ID, fr.Name, b.started = c.Block.ID, c.Block.Name, true
					}
					if rest != nil {
						fr.Arguments = *rest
					}
					r.Frames = append(r.Frames, Frame{Delay: delay, Tool: fr})
				} else if *rest != "" {
					r.Frames = append(r.Frames, textFrame(b.typ, *rest, delay))
				}
			}
		case llm.ChunkUsage:
			if u := c.Usage; u != nil {
				r.Usage = &Usage{
					PromptTokens:     u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens,
					CompletionTokens: u.OutputTokens,
					CacheHitTokens:   u.CacheReadTokens,
					ReasoningTokens:  u.ReasoningTokens,
				}
			}
		case llm.ChunkFinish:
			r.Finish = wireFinish(c.Reason)
			if c.Reason != nil && c.Reason.Kind == llm.FinishAborted {
				r.Fault = &Fault{Kind: FaultCut, After: len(r.Frames)}
			}
		}
	}
	if r.Usage == nil {
		r.NoUsage = true
	}
	return r
}

func textFrame(t llm.BlockType, s string, delay time.Duration) Frame {
	if t == llm.BlockReasoning {
		return Frame{Delay: delay, Reasoning: s}
	}
	return Frame{Delay: delay, Text: s}
}

// remainder is what the final block adds to the streamed deltas, or nil.
func remainder(streamed string, final llm.ContentBlock) *string {
	full := final.Text
	if final.Type == llm.BlockToolCall {
		full = final.Arguments
	}
	if rest, ok := strings.CutPrefix(full, streamed); ok && rest != "" {
		return &rest
	}
	return nil
}

// wireFinish maps a recorded finish back to a wire finish_reason.
func wireFinish(r *llm.FinishReason) string {
	if r == nil {
		return ""
	}
	switch r.Kind {
	case llm.FinishToolCalls:
		return "tool_calls"
	case llm.FinishMaxTokens:
		return "length"
	case llm.FinishError:
		if r.Failure != nil && r.Failure.Code != llm.CodeEmptyResponse {
			return strings.ToLower(string(r.Failure.Code))
		}
		return "stop"
	default:
		return "stop"
	}
}
