package models

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"harness/internal/llm"
	"harness/internal/session"
)

// LogRow is one stored row of a session's log: one boundary event (turn and
// step starts, user and assistant messages: what TailPage cuts at, Summary
// counts and search reads), or a group of the consecutive events between
// them, most of which are stream deltas (one row per reply instead of one
// per token). Every event keeps its own seq; a row is keyed by its first
// seq and holds N events with contiguous seqs.
//
// The session is its small integer LogKey, not its 36-character id: the
// key is in every row and in the boundary index.
//
// The columns hold what the event envelope holds, so reading needs no JSON
// parsing. A single event's Body is its data exactly as the log encoded it
// and Meta the rest of its envelope as MarshalEvent writes it after data
// (`,"surfaceOp":…`; empty for most events; see compactMeta). A group has
// Type "" and Meta "g" and a Body of its own (see group), or Meta "s" and
// that body compressed (logrows_compress.go). Rows rebuild each
// event's stored JSON byte for byte, so replay and export send what the log
// sent live.
type LogRow struct {
	LogKey     int64  `gorm:"primaryKey;autoIncrement:false"` // Session.LogKey
	Seq        int64  `gorm:"primaryKey;autoIncrement:false"` // first seq
	N          int    `gorm:"not null;default:1"`             // events in the row
	Time       int64  `gorm:"not null"`                       // first event's time
	Type       string `gorm:"size:64;not null"`
	Meta       string `gorm:"type:text;not null;default:''"`
	Body       []byte `gorm:"not null"`
	SearchText string `gorm:"type:text;not null;default:''"`
}

// maxRun bounds a group, so a range read starting inside one reads at most
// this many events too many: a read for seq > since starts at the row whose
// first seq is above since-maxRun.
const maxRun = 256

// maxGroupBytes bounds a group's body: a group grows by rewriting its row,
// so a large event (a long tool result) is a row of its own and ends the
// group.
const maxGroupBytes = 16 << 10

// Row kinds, in the Meta column.
const (
	metaGroup = "g" // a group: see group
)

// boundaryTypes are the events stored as rows of their own and listed by
// the boundary index (boundaryFilter).
var boundaryTypes = []session.Type{session.TypeTurnStart, session.TypeStepStart, session.TypeUserMessage, session.TypeAssistantMessage}

func isBoundary(t session.Type) bool {
	for _, b := range boundaryTypes {
		if t == b {
			return true
		}
	}
	return false
}

// runKey says which deltas share a turn, step, block and kind.
type runKey struct {
	turn, step, index int
	chunk             llm.ChunkType
}

// deltaOf reports whether ev can be stored as a bare delta: a text or
// reasoning delta with nothing in its envelope but data, whose data is
// exactly the canonical encoding (so rebuilding it gives the same bytes).
func deltaOf(ev session.Event) (runKey, string, bool) {
	if ev.Type != session.TypeAssistantChunk || ev.Ignorable || ev.SurfaceOp != nil || ev.SourceEventSeqs != nil {
		return runKey{}, "", false
	}
	// The writer sees every token: read the canonical form directly rather
	// than through encoding/json, then check it by rebuilding it.
	var k runKey
	d, ok := cutInt(ev.Data, `{"turn":`, &k.turn)
	if ok {
		d, ok = cutInt(d, `,"step":`, &k.step)
	}
	if !ok {
		return runKey{}, "", false
	}
	for _, kind := range chunkKinds {
		if rest, found := bytes.CutPrefix(d, []byte(`,"chunk":{"type":"`+string(kind)+`"`)); found {
			k.chunk, d = kind, rest
			break
		}
	}
	if k.chunk == "" {
		return runKey{}, "", false
	}
	if d, ok = cutInt(d, `,"index":`, &k.index); !ok {
		return runKey{}, "", false
	}
	d, ok = bytes.CutPrefix(d, []byte(`,"text":`))
	if !ok || !bytes.HasSuffix(d, []byte("}}")) {
		return runKey{}, "", false
	}
	var text string
	if json.Unmarshal(d[:len(d)-2], &text) != nil || !bytes.Equal(deltaData(k, text), ev.Data) {
		return runKey{}, "", false
	}
	return k, text, true
}

// cutInt reads prefix and a decimal integer from the start of d.
func cutInt(d []byte, prefix string, v *int) ([]byte, bool) {
	d, ok := bytes.CutPrefix(d, []byte(prefix))
	if !ok {
		return nil, false
	}
	i := 0
	if i < len(d) && d[i] == '-' {
		i++
	}
	for i < len(d) && d[i] >= '0' && d[i] <= '9' {
		i++
	}
	n, err := strconv.Atoi(string(d[:i]))
	if err != nil {
		return nil, false
	}
	*v = n
	return d[i:], true
}

// deltaData is the data of a delta as the log encodes it.
func deltaData(k runKey, text string) []byte {
	return appendDeltaData(make([]byte, 0, len(text)+72), k, text)
}

func appendDeltaData(b []byte, k runKey, text string) []byte {
	b = append(b, `{"turn":`...)
	b = strconv.AppendInt(b, int64(k.turn), 10)
	b = append(b, `,"step":`...)
	b = strconv.AppendInt(b, int64(k.step), 10)
	b = append(b, `,"chunk":{"type":"`...)
	b = append(b, k.chunk...)
	b = append(b, `","index":`...)
	b = strconv.AppendInt(b, int64(k.index), 10)
	b = append(b, `,"text":`...)
	b = appendMarshalString(b, text)
	return append(b, "}}"...)
}

// A group's body is a sequence of entries, one per event, each starting
// with a tag byte and the event's time as a signed varint offset from the
// previous event's (the first from the row's Time):
//
//	tagDelta:    len text                        (a delta of the last key)
//	tagDeltaKey: turn step index kind len text   (kind 0 text, 1 reasoning)
//	tagEvent:    type len meta len data
//
// Numbers are varints; type is an index into knownTypes plus one, or 0 and
// len and the type's text. The format is stored: extend it, never change
// what a tag or a knownTypes index means.
const (
	tagDelta    byte = 1
	tagDeltaKey byte = 2
	tagEvent    byte = 3
)

// knownTypes are the event types a group names by index. Append only.
var knownTypes = []session.Type{
	session.TypeAssistantChunk, session.TypeStepEnd, session.TypeTurnEnd, session.TypeInboxSpliced,
	session.TypeToolCall, session.TypeToolResult, session.TypeToolOutput, session.TypeTodoWrite,
	session.TypeRequestHeader, session.TypeRequestContext, session.TypeEndSeed, session.TypeLLMRetry,
	session.TypeLLMRetryStarted, session.TypeApprovalAsked, session.TypeApprovalDecided,
	session.TypeApprovalPolicy, session.TypeApprovalRevoked, session.TypePermissionMode,
	session.TypeModelSelected, session.TypeQuestionAsked, session.TypeQuestionAnswered,
	session.TypeCompactionStart, session.TypeCompactionSum, session.TypeCompactionPrune,
	session.TypeCompactionEnd, session.TypeSessionTitle,
}

var knownTypeIndex = func() map[session.Type]uint64 {
	m := make(map[session.Type]uint64, len(knownTypes))
	for i, t := range knownTypes {
		m[t] = uint64(i) + 1
	}
	return m
}()

// chunkKinds are the delta kinds by their stored number.
var chunkKinds = []llm.ChunkType{llm.ChunkTextDelta, llm.ChunkReasoningDelta}

// group is a group row being built or extended.
type group struct {
	first int64 // first seq
	n     int
	time0 int64 // first event's time
	last  int64 // last event's time
	key   runKey
	keyed bool // key is the last delta entry's
	body  []byte
}

// fits reports whether an event with seq and an entry of about size bytes
// can extend g.
func (g *group) fits(seq int64, size int) bool {
	return g != nil && seq == g.first+int64(g.n) && g.n < maxRun && len(g.body)+size <= maxGroupBytes
}

// extension is a group to extend g with: g's body is shared, and what is
// added goes after g's end (into its spare capacity, or a grown copy), so
// g itself reads the same and a failed batch can extend it again. No
// copy per batch: a streaming session's open group is extended on every
// commit, up to maxGroupBytes. The writer goroutine extends a session's
// tail one batch at a time, so two extensions never write together.
func (g *group) extension() *group {
	if g == nil {
		return nil
	}
	c := *g
	c.body = g.body[:len(g.body):cap(g.body)]
	return &c
}

func (g *group) time(t int64) {
	g.body = binary.AppendVarint(g.body, t-g.last)
	g.last = t
}

func (g *group) addDelta(t int64, k runKey, text string) {
	if g.keyed && g.key == k {
		g.body = append(g.body, tagDelta)
		g.time(t)
	} else {
		kind := uint64(0)
		if k.chunk == llm.ChunkReasoningDelta {
			kind = 1
		}
		g.body = append(g.body, tagDeltaKey)
		g.time(t)
		g.body = binary.AppendVarint(g.body, int64(k.turn))
		g.body = binary.AppendVarint(g.body, int64(k.step))
		g.body = binary.AppendVarint(g.body, int64(k.index))
		g.body = binary.AppendUvarint(g.body, kind)
		g.key, g.keyed = k, true
	}
	g.body = binary.AppendUvarint(g.body, uint64(len(text)))
	g.body = append(g.body, text...)
	g.n++
}

func (g *group) addEvent(t int64, typ session.Type, meta string, data []byte) {
	g.body = append(g.body, tagEvent)
	g.time(t)
	if i, ok := knownTypeIndex[typ]; ok {
		g.body = binary.AppendUvarint(g.body, i)
	} else {
		g.body = binary.AppendUvarint(g.body, 0)
		g.body = binary.AppendUvarint(g.body, uint64(len(typ)))
		g.body = append(g.body, typ...)
	}
	g.body = binary.AppendUvarint(g.body, uint64(len(meta)))
	g.body = append(g.body, meta...)
	g.body = binary.AppendUvarint(g.body, uint64(len(data)))
	g.body = append(g.body, data...)
	g.n++
}

func (g *group) row(arena *rowArena) eventRow {
	body, meta := compressGroup(g.body, arena)
	if meta == metaGroup {
		body = bytes.Clone(body)
	}
	return eventRow{seq: g.first, n: g.n, time: g.time0, meta: meta, body: body}
}

// splitEvent is the event's stored JSON (session.AppendEvent, what the log
// sends live) cut into data and the envelope after it (compacted: see
// compactMeta). Data that is not valid JSON is refused: the log never hands
// it out, and a replay must not send it.
func splitEvent(ev session.Event) (data []byte, meta string, err error) {
	data = ev.Data
	if data == nil {
		data = []byte("null")
	} else if !json.Valid(data) {
		return nil, "", fmt.Errorf("event %d: data is not valid JSON", ev.Seq)
	}
	tail, err := session.AppendEnvelopeTail(nil, ev)
	if err != nil {
		return nil, "", err
	}
	return data, compactMeta(string(tail[:len(tail)-1])), nil
}

func appendEnvelopeHead(b []byte, seq, t int64, typ string) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"time":`...)
	b = strconv.AppendInt(b, t, 10)
	b = append(b, `,"type":`...)
	b = session.AppendJSONString(b, typ)
	return append(b, `,"data":`...)
}

// plainASCII reports whether s is printable ASCII with nothing JSON
// escapes (with HTML escaping: no <, >, &).
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&':
			return false
		}
	}
	return true
}

// appendMarshalString appends s as json.Marshal encodes it, which is how
// the log encodes event data (HTML characters escaped).
func appendMarshalString(b []byte, s string) []byte {
	if plainASCII(s) { // the common case, without reflection
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

// seqsKey is where an assistant message's envelope lists the events it was
// assembled from: a contiguous range, stored as "first-last".
const seqsKey = `"sourceEventSeqs":[`

// appendOp is how every surface event's envelope goes on after its data;
// a stored meta starting "@" stands for it.
const appendOp = `,"surfaceOp":"append"`

// compactMeta shortens an envelope tail (a stored meta otherwise starts
// with "," or is empty): a leading appendOp becomes "@", then a contiguous
// sourceEventSeqs list becomes its bounds and the meta is marked with a
// leading "~". Any other list is kept as it is.
func compactMeta(meta string) string {
	if rest, ok := strings.CutPrefix(meta, appendOp); ok {
		return compactSeqs("@" + rest)
	}
	return compactSeqs(meta)
}

func compactSeqs(meta string) string {
	i := strings.Index(meta, seqsKey)
	if i < 0 {
		return meta
	}
	start := i + len(seqsKey)
	end := strings.IndexByte(meta[start:], ']')
	if end < 0 {
		return meta
	}
	list := meta[start : start+end]
	first, last, ok := contiguous(list)
	if !ok || expandRange(first, last) != list {
		return meta
	}
	return "~" + meta[:start] + strconv.FormatInt(first, 10) + "-" + strconv.FormatInt(last, 10) + meta[start+end:]
}

// contiguous parses "a,a+1,…,b" (at least two numbers).
func contiguous(list string) (first, last int64, ok bool) {
	parts := strings.Split(list, ",")
	if len(parts) < 2 {
		return 0, 0, false
	}
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || v < 0 || (i > 0 && v != last+1) {
			return 0, 0, false
		}
		if i == 0 {
			first = v
		}
		last = v
	}
	return first, last, true
}

func expandRange(first, last int64) string {
	b := make([]byte, 0, (last-first+1)*6)
	for v := first; v <= last; v++ {
		if v > first {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, v, 10)
	}
	return string(b)
}

// expandMeta undoes compactMeta.
func expandMeta(meta string) (string, error) {
	meta, err := expandSeqs(meta)
	if err != nil {
		return "", err
	}
	if rest, ok := strings.CutPrefix(meta, "@"); ok {
		return appendOp + rest, nil
	}
	return meta, nil
}

func expandSeqs(meta string) (string, error) {
	if !strings.HasPrefix(meta, "~") {
		return meta, nil
	}
	meta = meta[1:]
	i := strings.Index(meta, seqsKey)
	if i < 0 {
		return "", errors.New("compacted envelope without sourceEventSeqs")
	}
	start := i + len(seqsKey)
	end := strings.IndexByte(meta[start:], ']')
	if end < 0 {
		return "", errors.New("compacted envelope: unterminated sourceEventSeqs")
	}
	a, b, found := strings.Cut(meta[start:start+end], "-")
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if !found || err1 != nil || err2 != nil || last < first || last-first > 1<<20 {
		return "", fmt.Errorf("compacted envelope: bad range %q", meta[start:start+end])
	}
	return meta[:start] + expandRange(first, last) + meta[start+end:], nil
}

// encodeEvents turns a session's events into rows: boundaries (and events
// whose stored form does not split, or too large for a group) each a row,
// the events between them grouped. tail is the group the session's stored
// rows end with, which the first events may extend; the result's update is
// then that row rewritten, and next is the group the session's rows end
// with (nil when they end otherwise), for the following batch.
func encodeEvents(evs []session.Event, tail *group) (update *eventRow, rows []eventRow, next *group, err error) {
	return encodeEventsIn(evs, tail, nil)
}

// encodeEventsIn is encodeEvents with the compressed bodies in arena.
func encodeEventsIn(evs []session.Event, tail *group, arena *rowArena) (update *eventRow, rows []eventRow, next *group, err error) {
	cur := tail.extension()
	extending := cur != nil
	tailN := 0
	if tail != nil {
		tailN = tail.n
	}
	flush := func() {
		if cur == nil {
			return
		}
		if extending && cur.n == tailN {
			extending = false // the stored group is unchanged
			return
		}
		r := cur.row(arena)
		if extending {
			update = &r
			extending = false
		} else {
			rows = append(rows, r)
		}
	}
	for _, ev := range evs {
		if !isBoundary(ev.Type) {
			if k, text, ok := deltaOf(ev); ok {
				if !cur.fits(ev.Seq, len(text)+16) {
					flush()
					cur = &group{first: ev.Seq, time0: ev.Time, last: ev.Time}
				}
				cur.addDelta(ev.Time, k, text)
				continue
			}
		}
		data, meta, err := splitEvent(ev)
		if err != nil {
			return nil, nil, nil, err
		}
		if !isBoundary(ev.Type) && len(data)+len(meta)+len(ev.Type)+16 <= maxGroupBytes {
			if size := len(data) + len(meta) + 16; !cur.fits(ev.Seq, size) {
				flush()
				cur = &group{first: ev.Seq, time0: ev.Time, last: ev.Time}
			}
			cur.addEvent(ev.Time, ev.Type, meta, data)
			continue
		}
		flush()
		cur, extending = nil, false
		rows = append(rows, eventRow{seq: ev.Seq, n: 1, time: ev.Time, typ: string(ev.Type), text: searchText(ev), body: data, meta: meta})
	}
	next = cur
	flush()
	return update, rows, next, nil
}

// storedRow is a row as read back.
type storedRow struct {
	seq  int64
	n    int
	time int64
	typ  string
	meta string
	body []byte
	// scratch, when set, is a buffer reused for decompressed groups.
	scratch *[]byte
}

// typeNames interns the stored types (the strings a read hands on).
var typeNames = func() map[string]string {
	m := map[string]string{}
	for _, t := range append(slices.Clone(boundaryTypes), knownTypes...) {
		m[string(t)] = string(t)
	}
	return m
}()

// internType is the type named by b, allocated only when unusual.
func internType(b []byte) string {
	if s, ok := typeNames[string(b)]; ok {
		return s
	}
	return string(b)
}

// entry is one event of a stored row, its data and meta possibly scratch
// memory valid during the callback only.
type entry struct {
	seq  int64
	time int64
	typ  string
	meta string // compacted (see compactMeta)
	data []byte
	// delta is set for a bare delta, whose data is built on demand.
	delta *runKey
	text  []byte
}

func (e *entry) dataBytes() []byte {
	if e.delta != nil {
		return deltaData(*e.delta, string(e.text))
	}
	return bytes.Clone(e.data)
}

// entries hands each of the row's events to yield.
func (r storedRow) entries(yield func(e *entry) error) error {
	switch r.meta {
	case metaGroup:
		return r.groupEntries(yield)
	case metaS2:
		var buf []byte
		if r.scratch != nil {
			buf = *r.scratch
		}
		body, err := decompressGroup(r.seq, r.body, buf)
		if err != nil {
			return err
		}
		if r.scratch != nil && cap(body) > cap(buf) {
			*r.scratch = body
		}
		r.body = body
		return r.groupEntries(yield)
	}
	return yield(&entry{seq: r.seq, time: r.time, typ: r.typ, meta: r.meta, data: r.body})
}

func (r storedRow) groupEntries(yield func(e *entry) error) error {
	b := r.body
	bad := func(what string) error {
		return fmt.Errorf("group row at seq %d: %s", r.seq, what)
	}
	varint := func() (int64, bool) {
		v, n := binary.Varint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	bytesOf := func() ([]byte, bool) {
		l, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < l {
			return nil, false
		}
		out := b[n : n+int(l)]
		b = b[n+int(l):]
		return out, true
	}
	var key runKey
	keyed := false
	t := r.time
	e := &entry{}
	for i := 0; i < r.n; i++ {
		if len(b) == 0 {
			return bad(fmt.Sprintf("holds %d events, row says %d", i, r.n))
		}
		tag := b[0]
		b = b[1:]
		dt, ok := varint()
		if !ok {
			return bad("bad time")
		}
		t += dt
		*e = entry{seq: r.seq + int64(i), time: t}
		switch tag {
		case tagDeltaKey:
			turn, ok1 := varint()
			step, ok2 := varint()
			index, ok3 := varint()
			kind, n := binary.Uvarint(b)
			if !ok1 || !ok2 || !ok3 || n <= 0 || kind >= uint64(len(chunkKinds)) {
				return bad("bad delta key")
			}
			b = b[n:]
			key, keyed = runKey{turn: int(turn), step: int(step), index: int(index), chunk: chunkKinds[kind]}, true
			fallthrough
		case tagDelta:
			if !keyed {
				return bad("delta before its key")
			}
			text, ok := bytesOf()
			if !ok {
				return bad("bad delta")
			}
			e.typ, e.delta, e.text = string(session.TypeAssistantChunk), &key, text
		case tagEvent:
			ti, n := binary.Uvarint(b)
			if n <= 0 || ti > uint64(len(knownTypes)) {
				return bad("bad event type")
			}
			b = b[n:]
			if ti > 0 {
				e.typ = string(knownTypes[ti-1])
			} else {
				typ, ok := bytesOf()
				if !ok {
					return bad("bad event type")
				}
				e.typ = string(typ)
			}
			meta, ok1 := bytesOf()
			data, ok2 := bytesOf()
			if !ok1 || !ok2 {
				return bad("bad event")
			}
			e.meta, e.data = unsafeString(meta), data
		default:
			return bad(fmt.Sprintf("unknown tag %d", tag))
		}
		if err := yield(e); err != nil {
			return err
		}
	}
	if len(b) != 0 {
		return bad("trailing bytes")
	}
	return nil
}

// event builds the session.Event of an entry (Data copied).
func (e *entry) event() (session.Event, error) {
	ev := session.Event{Seq: e.seq, Time: e.time, Type: session.Type(e.typ), Data: e.dataBytes()}
	switch e.meta {
	case "":
		return ev, nil
	case "@": // a surface event's usual envelope
		ev.SurfaceOp = session.Append()
		return ev, nil
	}
	meta, err := expandMeta(e.meta)
	if err != nil {
		return session.Event{}, fmt.Errorf("stored event at seq %d: %w", e.seq, err)
	}
	var env struct {
		Ignorable       bool               `json:"ignorable"`
		SurfaceOp       *session.SurfaceOp `json:"surfaceOp"`
		SourceEventSeqs []int64            `json:"sourceEventSeqs"`
	}
	if err := json.Unmarshal([]byte("{"+meta[1:]+"}"), &env); err != nil {
		return session.Event{}, fmt.Errorf("stored event at seq %d: envelope: %w", e.seq, err)
	}
	ev.Ignorable, ev.SurfaceOp, ev.SourceEventSeqs = env.Ignorable, env.SurfaceOp, env.SourceEventSeqs
	return ev, nil
}

// appendRaw appends the stored JSON of an entry's event to b.
func (e *entry) appendRaw(b []byte) ([]byte, error) {
	meta, err := expandMeta(e.meta)
	if err != nil {
		return nil, fmt.Errorf("stored event at seq %d: %w", e.seq, err)
	}
	b = appendEnvelopeHead(b, e.seq, e.time, e.typ)
	if e.delta != nil {
		b = appendDeltaData(b, *e.delta, unsafeString(e.text))
	} else {
		b = append(b, e.data...)
	}
	b = append(b, meta...)
	return append(b, '}'), nil
}

// events expands a stored row into its events.
func (r storedRow) events(yield func(ev session.Event) error) error {
	return r.entries(func(e *entry) error {
		ev, err := e.event()
		if err != nil {
			return err
		}
		return yield(ev)
	})
}

// unsafeString views b as a string without copying, for bytes that stay
// unchanged while the string is used and a use that does not keep it (a
// row's scratch memory during its callback; entry.event and appendRaw
// copy what they keep).
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
