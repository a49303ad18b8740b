package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
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

// AppendEvent appends MarshalEvent's encoding of ev to b without
// encoding/json, which costs most of a replay: it re-validates Data byte by
// byte. It is for events whose Data is compact, valid JSON: every event a
// Log holds or hands out (appends are validated and compacted when
// admitted; a trusted load reads what this server stored).
func AppendEvent(b []byte, ev Event) ([]byte, error) {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, ev.Seq, 10)
	b = append(b, `,"time":`...)
	b = strconv.AppendInt(b, ev.Time, 10)
	b = append(b, `,"type":`...)
	b = AppendJSONString(b, string(ev.Type))
	b = append(b, `,"data":`...)
	if ev.Data == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, ev.Data...)
	}
	return AppendEnvelopeTail(b, ev)
}

// AppendEnvelopeTail appends what MarshalEvent writes after an event's
// data, closing brace included.
func AppendEnvelopeTail(b []byte, ev Event) ([]byte, error) {
	if ev.Ignorable {
		b = append(b, `,"ignorable":true`...)
	}
	if op := ev.SurfaceOp; op != nil {
		switch op.Op {
		case OpAppend:
			b = append(b, `,"surfaceOp":"append"`...)
		case OpReplace:
			b = append(b, `,"surfaceOp":{"op":"replace","start":`...)
			b = strconv.AppendInt(b, op.Start, 10)
			b = append(b, `,"end":`...)
			b = strconv.AppendInt(b, op.End, 10)
			b = append(b, '}')
		default:
			return nil, fmt.Errorf("marshal event %d: surface op: unknown op %q", ev.Seq, op.Op)
		}
	}
	if ev.SourceEventSeqs != nil {
		b = append(b, `,"sourceEventSeqs":[`...)
		for i, s := range ev.SourceEventSeqs {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, s, 10)
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// AppendJSONString appends s as MarshalEvent encodes a string (no HTML
// escaping).
func AppendJSONString(b []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c < 0x80 && c != '"' && c != '\\'
	}
	if plain {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
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
