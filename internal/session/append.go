package session

import "harness/internal/llm"

// admitted is an event that passed validation, with what validation decoded.
type admitted struct {
	ev      Event
	payload any          // decoded data for folded types (see folded)
	msg     *llm.Message // model projection of a surface node
}

// Append appends a non-surface event. data is marshalled with encoding/json
// once (json.RawMessage and []byte are validated and compacted instead).
// Nothing changes when it returns an error.
func (l *Log) Append(t Type, data any) (Event, error) {
	if IsSurface(t) {
		return Event{}, errorf(CodeInvalidSurface, "%s is a surface type: use AppendSurface", t)
	}
	raw, err := encodeData(data)
	if err != nil {
		return Event{}, atType(t, err)
	}
	return l.commit(Event{Type: t, Data: raw}, isPayloadOf(t, data))
}

// AppendSurface appends a surface event (user/message, assistant/message,
// tool/result) with its surface op and sourceEventSeqs (nil: provenance
// unknown; empty: a provider stream that yielded no chunk).
func (l *Log) AppendSurface(t Type, data any, op *SurfaceOp, sources []int64) (Event, error) {
	if !IsSurface(t) {
		return Event{}, errorf(CodeInvalidSurface, "%s is not a surface type: use Append", t)
	}
	if op == nil {
		return Event{}, errorf(CodeInvalidSurface, "%s requires a surface op", t)
	}
	raw, err := encodeData(data)
	if err != nil {
		return Event{}, atType(t, err)
	}
	ev := Event{Type: t, Data: raw, SurfaceOp: op, SourceEventSeqs: sources}
	return l.commit(ev.clone(), isPayloadOf(t, data))
}

// AppendRaw appends a pre-encoded event: Data (raw JSON), Ignorable,
// SurfaceOp and SourceEventSeqs are honoured; Seq and Time are assigned by
// the log. It is validated like a loaded event, so an unknown type must be
// marked ignorable.
func (l *Log) AppendRaw(ev Event) (Event, error) {
	raw, err := ownJSON(ev.Data)
	if err != nil {
		return Event{}, atType(ev.Type, err)
	}
	ev.Data = raw
	return l.commit(ev.clone(), false)
}

// commit assigns seq and time, validates, appends and publishes.
func (l *Log) commit(ev Event, typed bool) (Event, error) {
	l.mu.Lock()
	return l.commitAndUnlock(ev, typed)
}

// commitAndUnlock is commit for a caller that already holds the write lock;
// it releases it.
func (l *Log) commitAndUnlock(ev Event, typed bool) (Event, error) {
	ev.Seq = int64(len(l.records))
	ev.Time = l.clock()
	a, err := l.admit(ev, typed)
	if err != nil {
		l.mu.Unlock()
		return Event{}, err
	}
	l.apply(a)
	out := a.ev.clone()
	l.publishAndUnlock()
	return out, nil
}

// admit validates ev (with its final seq and time) against the current log
// without changing anything. The same rules serve Append and Load.
func (l *Log) admit(ev Event, typed bool) (admitted, error) {
	a, err := l.admitEvent(ev, typed)
	if err != nil {
		return admitted{}, atEvent(ev, err)
	}
	return a, nil
}

func (l *Log) admitEvent(ev Event, typed bool) (admitted, error) {
	a := admitted{ev: ev}
	switch {
	case ev.Type == "":
		return a, errorf(CodeInvalidEnvelope, "empty type")
	case ev.Type == typeHeaderDelta:
		return a, errorf(CodeInvalidEnvelope, "legacy request/header-delta is not supported")
	case ev.Time < 0 || ev.Time > maxSafeInteger:
		return a, errorf(CodeInvalidEnvelope, "time %d is not a safe non-negative integer", ev.Time)
	case len(ev.Data) == 0:
		return a, errorf(CodeInvalidData, "data is empty")
	}
	if err := checkSurfaceEnvelope(ev); err != nil {
		return a, err
	}
	if !KnownTypes[ev.Type] {
		if !ev.Ignorable {
			return a, errorf(CodeUnknownEventType, "unknown event type %q is not ignorable", ev.Type)
		}
		return a, nil // kept as raw JSON, skipped by every fold
	}
	payload, err := decodePayload(ev.Type, ev.Data, typed)
	if err != nil {
		return a, err
	}
	a.payload = payload
	if ev.Type == TypeRequestHeader {
		if err := checkRequestHeader(ev.Data, payload.(*RequestHeader)); err != nil {
			return a, err
		}
	}
	if err := checkApprovalScope(ev.Type, payload); err != nil {
		return a, err
	}
	if !IsSurface(ev.Type) {
		return a, nil
	}
	if a.msg, err = projectMessage(ev.Type, payload); err != nil {
		return a, err
	}
	return a, l.surface.check(ev, func(seq int64) Event { return l.records[seq].ev })
}

// apply commits an admitted event: record, surface, derived history, fold,
// Sink and the subscriber queue. The caller holds the write lock (or owns the
// log exclusively, as Load does).
func (l *Log) apply(a admitted) {
	l.records = append(l.records, record{ev: a.ev, msg: a.msg})
	if IsSurface(a.ev.Type) {
		l.surface.apply(a.ev)
		if a.ev.SurfaceOp.Op == OpReplace {
			l.deriveRebuild()
		} else {
			l.deriveAppended(a.msg)
		}
	}
	l.fold.apply(a.ev, a.payload)
	if l.sink != nil {
		l.sink(a.ev.clone())
	}
	if len(l.subs) > 0 {
		l.pending = append(l.pending, a.ev)
	}
}

func atType(t Type, err error) error {
	if e, ok := err.(*Error); ok {
		return errorf(e.Code, "%s: %s", t, e.Message)
	}
	return err
}

// AppendGroup appends the events build returns under one lock, so no other
// append lands between them (compaction's summary and its checkpoint, a
// prune marker and its replacing result). build gets the seq the first
// event will take, to cite earlier events of the group, and must not call
// the log. Drafts are validated in order; on an error the events before it
// stay appended (and are returned) and the rest are dropped.
func (l *Log) AppendGroup(build func(next int64) ([]Draft, error)) ([]Event, error) {
	l.mu.Lock()
	drafts, err := build(int64(len(l.records)))
	if err != nil {
		l.mu.Unlock()
		return nil, err
	}
	out := make([]Event, 0, len(drafts))
	for _, d := range drafts {
		if IsSurface(d.Type) != (d.SurfaceOp != nil) {
			err = errorf(CodeInvalidSurface, "%s: a surface op goes with surface types only", d.Type)
			break
		}
		var raw []byte
		if raw, err = encodeData(d.Data); err != nil {
			err = atType(d.Type, err)
			break
		}
		ev := Event{Seq: int64(len(l.records)), Time: l.clock(), Type: d.Type, Data: raw, SurfaceOp: d.SurfaceOp, SourceEventSeqs: d.SourceEventSeqs}
		var a admitted
		if a, err = l.admit(ev.clone(), isPayloadOf(d.Type, d.Data)); err != nil {
			break
		}
		l.apply(a)
		out = append(out, a.ev.clone())
	}
	l.publishAndUnlock()
	return out, err
}

// Ingest appends an event another process already stored, keeping its seq
// and time: a replica that follows a session owned elsewhere mirrors the
// stored log this way. The seq must be the log's next; the event is
// validated as Load validates a stored one (trusted: its Data was checked
// when first appended) and published to subscribers like an append.
func (l *Log) Ingest(ev Event) error {
	l.mu.Lock()
	if want := int64(len(l.records)); ev.Seq != want {
		l.mu.Unlock()
		return errorf(CodeNotContiguous, "not contiguous: expected seq %d, got seq %d", want, ev.Seq)
	}
	a, err := l.admit(ev.clone(), true)
	if err != nil {
		l.mu.Unlock()
		return err
	}
	l.apply(a)
	l.publishAndUnlock()
	return nil
}
