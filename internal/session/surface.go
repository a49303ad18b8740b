package session

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
)

// surface is the ordered list of seqs that can become model history (§1.4).
type surface struct {
	nodes []int64
	gen   int // committed replacements
}

func (s *surface) index(seq int64) int { return slices.Index(s.nodes, seq) }

// span returns the node indexes [i, j] a replace op covers.
func (s *surface) span(op *SurfaceOp) (int, int, error) {
	i, j := s.index(op.Start), s.index(op.End)
	switch {
	case i < 0:
		return 0, 0, errorf(CodeInvalidSurface, "replace start %d is not a current surface node", op.Start)
	case j < 0:
		return 0, 0, errorf(CodeInvalidSurface, "replace end %d is not a current surface node", op.End)
	case i > j:
		return 0, 0, errorf(CodeInvalidSurface, "replace start %d comes after end %d on the surface", op.Start, op.End)
	}
	return i, j, nil
}

// apply commits a validated surface event.
func (s *surface) apply(ev Event) {
	if ev.SurfaceOp.Op == OpAppend {
		s.nodes = append(s.nodes, ev.Seq)
		return
	}
	i, j, _ := s.span(ev.SurfaceOp)
	s.nodes = slices.Replace(s.nodes, i, j+1, ev.Seq)
	s.gen++
}

// checkSurfaceEnvelope enforces that exactly the surface types carry a
// surface op and sourceEventSeqs.
func checkSurfaceEnvelope(ev Event) error {
	if !IsSurface(ev.Type) {
		if ev.SurfaceOp != nil || ev.SourceEventSeqs != nil {
			return errorf(CodeInvalidSurface, "only surface types carry surfaceOp or sourceEventSeqs")
		}
		return nil
	}
	if ev.SurfaceOp == nil {
		return errorf(CodeInvalidSurface, "surface type requires a surface op")
	}
	if ev.SurfaceOp.Op != OpAppend && ev.SurfaceOp.Op != OpReplace {
		return errorf(CodeInvalidSurface, "unknown surface op %q", ev.SurfaceOp.Op)
	}
	return checkSources(ev)
}

// checkSources validates sourceEventSeqs: unique, non-negative, before the
// event itself; an explicit empty list only on assistant/message.
func checkSources(ev Event) error {
	seqs := ev.SourceEventSeqs
	if seqs != nil && len(seqs) == 0 && ev.Type != TypeAssistantMessage {
		return errorf(CodeInvalidSurface, "empty sourceEventSeqs is allowed only on assistant/message")
	}
	seen := make(map[int64]bool, len(seqs))
	for _, s := range seqs {
		if s < 0 || s >= ev.Seq {
			return errorf(CodeInvalidSurface, "sourceEventSeqs entry %d is not an earlier seq", s)
		}
		if seen[s] {
			return errorf(CodeInvalidSurface, "sourceEventSeqs entry %d is repeated", s)
		}
		seen[s] = true
	}
	return nil
}

// checkSurface validates ev's surface transition against the current surface
// before anything is committed. stored returns a committed event by seq.
func (s *surface) check(ev Event, stored func(seq int64) Event) error {
	op := ev.SurfaceOp
	if op.Op == OpAppend {
		return nil
	}
	i, j, err := s.span(op)
	if err != nil {
		return err
	}
	shadowed := s.nodes[i : j+1]
	for _, seq := range shadowed {
		if !slices.Contains(ev.SourceEventSeqs, seq) {
			return errorf(CodeInvalidSurface, "replace must cite shadowed node %d in sourceEventSeqs", seq)
		}
	}
	if ev.Type != TypeToolResult {
		return nil
	}
	if len(shadowed) != 1 {
		return errorf(CodeInvalidSurface, "a tool/result replacement must shadow exactly one node, not %d", len(shadowed))
	}
	old := stored(shadowed[0])
	if old.Type != TypeToolResult {
		return errorf(CodeInvalidSurface, "a tool/result may only replace a tool/result, not %s %d", old.Type, old.Seq)
	}
	same, err := equalExceptResultContent(old.Data, ev.Data)
	if err != nil {
		return err
	}
	if !same {
		return errorf(CodeInvalidSurface, "a tool/result replacement may change only the tool-result content of %d", old.Seq)
	}
	return nil
}

// equalExceptResultContent compares two tool/result data documents with the
// inner tool-result block's content removed. It works on generic JSON so that
// fields this package does not model are compared too.
func equalExceptResultContent(a, b []byte) (bool, error) {
	strip := func(raw []byte) (any, error) {
		var v map[string]any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nil, errorf(CodeInvalidData, "tool/result data: %v", err)
		}
		if msg, ok := v["message"].(map[string]any); ok {
			if content, ok := msg["content"].([]any); ok && len(content) == 1 {
				if block, ok := content[0].(map[string]any); ok {
					delete(block, "content")
				}
			}
		}
		return v, nil
	}
	x, err := strip(a)
	if err != nil {
		return false, err
	}
	y, err := strip(b)
	if err != nil {
		return false, err
	}
	return reflect.DeepEqual(x, y), nil
}
