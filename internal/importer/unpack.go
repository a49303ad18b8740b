package importer

import (
	"encoding/json"
	"fmt"

	"harness/internal/llm"
	"harness/internal/session"
)

// packedDelta maps the packed row types of DeepSeek Harness logs to the
// chunk type of each delta they hold.
var packedDelta = map[string]llm.ChunkType{
	"reasoning-chunks": llm.ChunkReasoningDelta,
	"text-chunks":      llm.ChunkTextDelta,
	"tool-call-chunks": llm.ChunkToolCallDelta,
}

// IsPacked reports whether typ is a packed row type.
func IsPacked(typ string) bool { return packedDelta[typ] != "" }

// packedRow is the data of a packed row: a run of deltas of one block.
type packedRow struct {
	Turn  int      `json:"turn"`
	Step  int      `json:"step"`
	Index int      `json:"index"`
	Dt    []int64  `json:"dt"`
	Texts []string `json:"texts"`
	Args  []string `json:"args"`
	ID    string   `json:"id"`
	Name  string   `json:"name"`
}

// Unpack expands one packed row (reasoning-chunks, text-chunks or
// tool-call-chunks with seq0, time0 and data) into its assistant/chunk
// events: delta k gets seq seq0+k and time time0+sum(dt[:k]); a tool-call
// delta carries the call id, the first one also its name.
func Unpack(typ string, seq0, time0 int64, data json.RawMessage) ([]session.Event, error) {
	ct := packedDelta[typ]
	if ct == "" {
		return nil, fmt.Errorf("%q is not a packed row type", typ)
	}
	var p packedRow
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s data: %v", typ, err)
	}
	parts := p.Texts
	if ct == llm.ChunkToolCallDelta {
		parts = p.Args
	}
	switch {
	case len(parts) == 0:
		return nil, fmt.Errorf("%s holds no deltas", typ)
	case len(p.Dt) < len(parts)-1:
		return nil, fmt.Errorf("%s holds %d deltas but %d time offsets (want %d)", typ, len(parts), len(p.Dt), len(parts)-1)
	case ct == llm.ChunkToolCallDelta && p.ID == "":
		return nil, fmt.Errorf("%s has no call id", typ)
	}
	out := make([]session.Event, len(parts))
	tm := time0
	for k, part := range parts {
		if k > 0 {
			tm += p.Dt[k-1]
		}
		c := llm.Chunk{Type: ct, Index: p.Index}
		if ct == llm.ChunkToolCallDelta {
			c.ID, c.ArgumentsDelta = p.ID, part
			if k == 0 {
				c.Name = p.Name
			}
		} else {
			c.Text = part
		}
		b, err := json.Marshal(session.AssistantChunk{Turn: p.Turn, Step: p.Step, Chunk: c})
		if err != nil {
			return nil, fmt.Errorf("%s: %v", typ, err)
		}
		out[k] = session.Event{Seq: seq0 + int64(k), Time: tm, Type: session.TypeAssistantChunk, Data: b}
	}
	return out, nil
}
