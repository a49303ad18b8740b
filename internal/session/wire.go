package session

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// UnmarshalEvent parses one stored event strictly (§1.1): only the envelope
// keys type, seq, time, data, ignorable, surfaceOp and sourceEventSeqs are
// accepted; type, seq, time and data are required; ignorable, when present,
// must be true. It checks the envelope only; Load validates the rest.
func UnmarshalEvent(b []byte) (Event, error) {
	var w struct {
		Type            *Type           `json:"type"`
		Seq             *int64          `json:"seq"`
		Time            *int64          `json:"time"`
		Data            json.RawMessage `json:"data"`
		Ignorable       *bool           `json:"ignorable"`
		SurfaceOp       *SurfaceOp      `json:"surfaceOp"`
		SourceEventSeqs []int64         `json:"sourceEventSeqs"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return Event{}, errorf(CodeInvalidEnvelope, "event: %v", err)
	}
	if dec.More() {
		return Event{}, errorf(CodeInvalidEnvelope, "event: trailing data after the object")
	}
	switch {
	case w.Type == nil || w.Seq == nil || w.Time == nil || w.Data == nil:
		return Event{}, errorf(CodeInvalidEnvelope, "event: type, seq, time and data are required")
	case w.Ignorable != nil && !*w.Ignorable:
		return Event{}, errorf(CodeInvalidEnvelope, "event seq %d: ignorable may only be true", *w.Seq)
	}
	return Event{
		Seq: *w.Seq, Time: *w.Time, Type: *w.Type, Data: w.Data,
		Ignorable: w.Ignorable != nil, SurfaceOp: w.SurfaceOp, SourceEventSeqs: w.SourceEventSeqs,
	}, nil
}

// MarshalEvent encodes ev as one JSON object and keeps Data byte for byte;
// json.Marshal would HTML-escape <, > and & inside it. Use it where stored
// bytes must match (JSONL export, checksums).
func MarshalEvent(ev Event) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		return nil, fmt.Errorf("marshal event %d: %w", ev.Seq, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// EnsureEndSeed appends session/end-seed unless the log already ends with
// one. A driver resuming a stored session calls it once, so unmatched
// brackets from the previous process (e.g. compaction/start) fall before the
// last end-seed and count as dead (§1.8), while re-opening an untouched
// session does not grow its log. It reports whether it appended.
func (l *Log) EnsureEndSeed() (Event, bool, error) {
	l.mu.Lock()
	if n := len(l.records); n > 0 && l.records[n-1].ev.Type == TypeEndSeed {
		l.mu.Unlock()
		return Event{}, false, nil
	}
	ev, err := l.commitAndUnlock(Event{Type: TypeEndSeed, Data: json.RawMessage(`{}`)}, false)
	return ev, err == nil, err
}
