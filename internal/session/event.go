package session

import (
	"encoding/json"
	"fmt"
)

// Type is an event's wire name.
type Type string

// Event is one entry of a session log. Seq is contiguous from 0 and equals the
// log length at append; Time is epoch milliseconds; Data is lossless JSON.
//
// SurfaceOp and SourceEventSeqs are set only on surface types (user/message,
// assistant/message, tool/result). SourceEventSeqs distinguishes nil (absent:
// provenance unknown) from an empty slice (an explicit []: a provider stream
// that yielded no chunk), hence omitzero.
type Event struct {
	Seq             int64           `json:"seq"`
	Time            int64           `json:"time"`
	Type            Type            `json:"type"`
	Data            json.RawMessage `json:"data"`
	Ignorable       bool            `json:"ignorable,omitempty"`
	SurfaceOp       *SurfaceOp      `json:"surfaceOp,omitempty"`
	SourceEventSeqs []int64         `json:"sourceEventSeqs,omitzero"`
}

// SurfaceOpKind is how a surface event changes the surface.
type SurfaceOpKind string

const (
	OpAppend  SurfaceOpKind = "append"
	OpReplace SurfaceOpKind = "replace"
)

// SurfaceOp is "append" or {op: "replace", start, end}: start and end are
// current surface nodes (seqs), the inclusive span between them is replaced by
// the new event.
type SurfaceOp struct {
	Op    SurfaceOpKind
	Start int64
	End   int64
}

// Append is the surface op that pushes the event onto the surface.
func Append() *SurfaceOp { return &SurfaceOp{Op: OpAppend} }

// Replace is the surface op that replaces the span [start, end] of the surface.
func Replace(start, end int64) *SurfaceOp { return &SurfaceOp{Op: OpReplace, Start: start, End: end} }

// MarshalJSON writes "append" or {"op":"replace","start":s,"end":e}.
func (o SurfaceOp) MarshalJSON() ([]byte, error) {
	switch o.Op {
	case OpAppend:
		return []byte(`"append"`), nil
	case OpReplace:
		return json.Marshal(struct {
			Op    SurfaceOpKind `json:"op"`
			Start int64         `json:"start"`
			End   int64         `json:"end"`
		}{o.Op, o.Start, o.End})
	default:
		return nil, fmt.Errorf("surface op: unknown op %q", o.Op)
	}
}

// UnmarshalJSON accepts both wire forms.
func (o *SurfaceOp) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if SurfaceOpKind(s) != OpAppend {
			return fmt.Errorf("surface op: unknown op %q", s)
		}
		*o = SurfaceOp{Op: OpAppend}
		return nil
	}
	var r struct {
		Op    SurfaceOpKind `json:"op"`
		Start *int64        `json:"start"`
		End   *int64        `json:"end"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("surface op: %w", err)
	}
	if r.Op != OpReplace || r.Start == nil || r.End == nil {
		return fmt.Errorf("surface op: want \"append\" or {op:\"replace\",start,end}")
	}
	*o = SurfaceOp{Op: OpReplace, Start: *r.Start, End: *r.End}
	return nil
}

// Decode unmarshals an event's data into T.
func Decode[T any](ev Event) (T, error) {
	var v T
	if err := json.Unmarshal(ev.Data, &v); err != nil {
		return v, fmt.Errorf("decode %s #%d: %w", ev.Type, ev.Seq, err)
	}
	return v, nil
}

// Header is the session metadata kept outside the log.
type Header struct {
	ID            string `json:"id"`
	CreatedAt     int64  `json:"createdAt"`
	Cwd           string `json:"cwd,omitempty"`
	ParentSession string `json:"parentSession,omitempty"`
	// SeedLength is the number of events that came from a seed (fork, import),
	// not counting the session/end-seed marker. The inbox projection ignores
	// splices before it, so a fork does not inherit its parent's queue.
	SeedLength int64 `json:"seedLength,omitempty"`
}
