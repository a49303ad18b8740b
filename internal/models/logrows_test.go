package models

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"harness/internal/llm"
	"harness/internal/session"
)

// delta is a text delta of turn 1, as the log encodes it.
func delta(t *testing.T, l *session.Log, turn int, text string) session.Event {
	t.Helper()
	e, err := l.Append(session.TypeAssistantChunk, session.AssistantChunk{Turn: turn, Step: 1, Chunk: llm.Chunk{Type: llm.ChunkTextDelta, Index: 0, Text: text}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// storedRows counts a session's rows.
func storedRows(t *testing.T, db *DB, id string) int64 {
	t.Helper()
	var n int64
	if err := db.R.Model(&LogRow{}).Where("log_key = (SELECT log_key FROM sessions WHERE id = ?)", id).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// TestGroupsAcrossBatches: deltas written one batch at a time (as a
// stream at model pace is) end up in one row with the events up to the next
// boundary, and every event reads back byte for byte, from any cursor.
func TestGroupsAcrossBatches(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		s := newTestStore(t, db, WriterOptions{})
		ctx := ctxTimeout(t, 20*time.Second)
		sess := mustCreate(t, s, &Session{OwnerID: "o"})
		l := session.New(session.Header{ID: sess.ID}, session.Options{Sink: func(ev session.Event) { s.W.Enqueue(sess.ID, ev) }})
		var want []session.Event
		add := func(e session.Event, err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, e)
		}
		add(l.Append(session.TypeTurnStart, session.TurnStart{Turn: 1}))
		add(l.Append(session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 1}))
		groupMeta := func() string {
			var meta string
			if err := db.R.Model(&LogRow{}).Where("log_key = ? AND seq = 2", sess.LogKey).Select("meta").Scan(&meta).Error; err != nil {
				t.Fatal(err)
			}
			return meta
		}
		for i := range 40 {
			want = append(want, delta(t, l, 1, fmt.Sprintf("tok%d <&> \"q\" ✓ ", i)))
			if i%3 == 0 {
				if err := s.W.Flush(ctx, sess.ID); err != nil { // a batch boundary
					t.Fatal(err)
				}
			}
			if i == 0 && groupMeta() != metaGroup {
				t.Fatalf("a one-delta group is stored as %q, want plain", groupMeta())
			}
		}
		// Grown across batches, the group is now compressed.
		if m := groupMeta(); m != metaS2 {
			t.Fatalf("the grown group is stored as %q, want compressed", m)
		}
		add(l.Append(session.TypeAssistantChunk, session.AssistantChunk{Turn: 1, Step: 1, Chunk: llm.Chunk{Type: llm.ChunkReasoningDelta, Index: 1, Text: "think"}}))
		add(l.Append(session.TypeStepEnd, session.StepBoundary{Turn: 1, Step: 1}))
		if err := s.W.Flush(ctx, sess.ID); err != nil {
			t.Fatal(err)
		}
		// turn/start, step/start, one group of 40 text deltas, a reasoning
		// delta and step/end.
		if n := storedRows(t, db, sess.ID); n != 3 {
			t.Fatalf("%d rows for %d events, want 3", n, len(want))
		}
		for _, since := range []int64{-1, 0, 1, 2, 7, 30, 41, 42, 43} {
			raw, err := s.EventsRaw(ctx, sess.ID, since, 0)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(raw)) != int64(len(want))-since-1 {
				t.Fatalf("since %d: %d events, want %d", since, len(raw), int64(len(want))-since-1)
			}
			for i, r := range raw {
				w := want[since+1+int64(i)]
				if r.Seq != w.Seq || !bytes.Equal(r.Body, mustMarshal(t, w)) {
					t.Fatalf("since %d: event %d = %s, want %s", since, r.Seq, r.Body, mustMarshal(t, w))
				}
			}
		}
		page, err := s.decodeRange(ctx, sess.ID, 5, 20, 0)
		if err != nil || len(page) != 14 || page[0].Seq != 6 || page[13].Seq != 19 {
			t.Fatalf("range (5, 20): %d events, %v", len(page), err)
		}
		limited, err := s.EventsSince(ctx, sess.ID, 10, 3)
		if err != nil || len(limited) != 3 || limited[0].Seq != 11 || string(limited[2].Data) != string(want[13].Data) {
			t.Fatalf("limit: %+v, %v", limited, err)
		}
	})
}

// TestGroupsAreBounded: a group never holds more than maxRun events, so a
// cursor read looks back at most maxRun seqs, nor more than maxGroupBytes,
// so extending it rewrites a bounded row; a larger event is a row of its
// own.
func TestGroupsAreBounded(t *testing.T) {
	t.Parallel()
	l := session.New(session.Header{ID: "s"}, session.Options{})
	var evs []session.Event
	for i := range 2*maxRun + 3 {
		evs = append(evs, delta(t, l, 1, fmt.Sprint(i)))
	}
	_, rows, next, err := encodeEvents(evs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0].n != maxRun || rows[2].n != 3 || next == nil || next.first != rows[2].seq {
		t.Fatalf("rows %d (n %d, %d), next %+v", len(rows), rows[0].n, rows[len(rows)-1].n, next)
	}

	big := strings.Repeat("x", maxGroupBytes/3)
	evs = evs[:0]
	for i := range 7 {
		evs = append(evs, delta(t, l, 2, big))
		if i == 5 {
			e, err := l.Append(session.TypeToolOutput, map[string]string{"output": strings.Repeat("y", maxGroupBytes)})
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, e)
		}
	}
	_, rows, _, err = encodeEvents(evs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var shape []string
	for _, r := range rows {
		if len(r.body) > maxGroupBytes+len(big) {
			t.Errorf("row at %d holds %d bytes", r.seq, len(r.body))
		}
		shape = append(shape, fmt.Sprintf("%s%d", r.meta, r.n))
	}
	// Groups of two thirds-of-a-limit deltas (compressed: "s"); the large
	// output alone.
	if got := strings.Join(shape, " "); got != "s2 s2 s2 1 s1" {
		t.Errorf("rows %q", got)
	}
}

// TestUnusualEventsReadBackExactly: events that are not bare deltas
// (non-canonical data, every envelope field, unknown types) read back
// byte for byte, grouped or not; data that is not JSON is refused.
func TestUnusualEventsReadBackExactly(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		s := newTestStore(t, db, WriterOptions{})
		ctx := ctxTimeout(t, 20*time.Second)
		sess := mustCreate(t, s, &Session{OwnerID: "o"})
		var want []session.Event
		for seq := range int64(25) {
			e := variedEvent(sess.ID, seq)
			want = append(want, e)
			s.W.Enqueue(sess.ID, e)
		}
		if err := s.W.Flush(ctx, sess.ID); err != nil {
			t.Fatal(err)
		}
		raw, err := s.EventsRaw(ctx, sess.ID, -1, 0)
		if err != nil || len(raw) != len(want) {
			t.Fatalf("%d events, %v", len(raw), err)
		}
		for i, r := range raw {
			if !bytes.Equal(r.Body, mustMarshal(t, want[i])) {
				t.Fatalf("event %d = %s, want %s", i, r.Body, mustMarshal(t, want[i]))
			}
		}
		evs, err := s.EventsSince(ctx, sess.ID, -1, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range evs {
			if !bytes.Equal(mustMarshal(t, e), mustMarshal(t, want[i])) {
				t.Fatalf("decoded event %d = %s, want %s", i, mustMarshal(t, e), mustMarshal(t, want[i]))
			}
		}
	})
	bad := session.Event{Seq: 0, Type: session.TypeToolOutput, Data: []byte(`{"output":`)}
	if _, _, _, err := encodeEvents([]session.Event{bad}, nil); err == nil {
		t.Error("stored data that is not JSON")
	}
}

// TestLegacyDatabaseUpgrades: a database of an earlier version (sessions
// without log keys, one JSON event per events row) opens with every session
// keyed, its log in log_rows grouped and byte for byte, the events of
// sessions that no longer exist dropped, and no events table left; opening
// it again changes nothing.
func TestLegacyDatabaseUpgrades(t *testing.T) {
	t.Parallel()
	legacy := []string{
		`CREATE TABLE sessions (id varchar(36) PRIMARY KEY, owner_id varchar(36) NOT NULL, title varchar(255), head bigint NOT NULL DEFAULT -1, created_at timestamp, updated_at timestamp)`,
		`CREATE TABLE events (session_id varchar(36) NOT NULL, seq bigint NOT NULL, "time" bigint NOT NULL, "type" varchar(64) NOT NULL, body %s NOT NULL, search_text text NOT NULL DEFAULT '', PRIMARY KEY (session_id, seq))`,
	}
	logs := map[string][]session.Event{}
	for _, id := range []string{"legacy-b", "legacy-a", "gone"} {
		l := session.New(session.Header{ID: id}, session.Options{})
		var evs []session.Event
		for i := range 10 {
			evs = append(evs, delta(t, l, 1, fmt.Sprint(id, i)))
		}
		for seq := range int64(25) {
			evs = append(evs, variedEvent(id, 10+seq))
		}
		evs[12] = ev(12, session.TypeTodoWrite, session.TodoWrite{Todos: []session.Todo{{Content: id, Status: "pending"}}})
		logs[id] = evs
	}
	fill := func(t *testing.T, exec func(q string, args ...any) error, blob string) {
		t.Helper()
		for i, q := range legacy {
			if i == 1 {
				q = fmt.Sprintf(q, blob)
			}
			if err := exec(q); err != nil {
				t.Fatal(err)
			}
		}
		created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i, id := range []string{"legacy-a", "legacy-b"} { // "gone" was deleted
			at := created.Add(time.Duration(i) * time.Hour)
			if err := exec(`INSERT INTO sessions (id, owner_id, title, head, created_at, updated_at) VALUES (?, 'o', '', ?, ?, ?)`,
				id, len(logs[id])-1, at, at); err != nil {
				t.Fatal(err)
			}
		}
		for id, evs := range logs {
			for _, e := range evs {
				if err := exec(`INSERT INTO events (session_id, seq, "time", "type", body, search_text) VALUES (?, ?, ?, ?, ?, '')`,
					id, e.Seq, e.Time, string(e.Type), mustMarshal(t, e)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	check := func(t *testing.T, db *DB) {
		t.Helper()
		ctx := ctxTimeout(t, 20*time.Second)
		if db.W.Migrator().HasTable("events") {
			t.Fatal("the events table is still there")
		}
		s := newTestStore(t, db, WriterOptions{})
		for i, id := range []string{"legacy-a", "legacy-b"} {
			sess, err := s.GetSession(ctx, id)
			if err != nil || sess.LogKey != int64(i+1) {
				t.Fatalf("session %s: log key %d, %v (want %d: keys follow creation)", id, sess.LogKey, err, i+1)
			}
			want := logs[id]
			raw, err := s.EventsRaw(ctx, id, -1, 0)
			if err != nil || len(raw) != len(want) {
				t.Fatalf("%s: %d events, %v", id, len(raw), err)
			}
			for i, r := range raw {
				if !bytes.Equal(r.Body, mustMarshal(t, want[i])) {
					t.Fatalf("%s: event %d = %s, want %s", id, i, r.Body, mustMarshal(t, want[i]))
				}
			}
			if n := storedRows(t, db, id); n >= int64(len(want))/2 {
				t.Errorf("%s: %d rows for %d events: not grouped", id, n, len(want))
			}
			if todos, err := s.LastTodos(ctx, id); err != nil || len(todos) != 1 || todos[0].Content != id {
				t.Errorf("%s: todo list %+v, %v", id, todos, err)
			}
		}
		var total int64
		if err := db.R.Model(&LogRow{}).Select("COALESCE(SUM(n), 0)").Scan(&total).Error; err != nil || total != int64(len(logs["legacy-a"])+len(logs["legacy-b"])) {
			t.Fatalf("%d events stored in all (%v): the deleted session's should be gone", total, err)
		}
		// A new session gets the next key.
		fresh := mustCreate(t, s, &Session{OwnerID: "o"})
		if fresh.LogKey != 3 {
			t.Fatalf("new session's log key %d, want 3", fresh.LogKey)
		}
	}

	t.Run(DriverSQLite, func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "old.db")
		raw, err := sql.Open("sqlite3", path)
		if err != nil {
			t.Fatal(err)
		}
		fill(t, func(q string, args ...any) error { _, err := raw.Exec(q, args...); return err }, "BLOB")
		if err := raw.Close(); err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second open finds nothing to do
			db, err := Open(t.Context(), testLogger(t), Config{DSN: path})
			if err != nil {
				t.Fatal(err)
			}
			check(t, db)
			if err := db.W.Where("log_key = 3").Delete(&Session{}).Error; err != nil {
				t.Fatal(err)
			}
			_ = db.Close()
		}
	})
	dsn := os.Getenv(pgDSNEnv)
	if dsn == "" {
		return
	}
	t.Run(DriverPostgres, func(t *testing.T) {
		t.Parallel()
		schemaDSN, admin := postgresSchema(t, dsn)
		n := 0
		fill(t, func(q string, args ...any) error {
			n = 0
			q = regexp.MustCompile(`\?`).ReplaceAllStringFunc(q, func(string) string { n++; return fmt.Sprintf("$%d", n) })
			_, err := admin.Exec(q, args...)
			return err
		}, "bytea")
		db, err := Open(t.Context(), testLogger(t), Config{Driver: DriverPostgres, DSN: schemaDSN})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		check(t, db)
	})
}

// TestDeltaOf: the delta reader takes exactly the canonical encodings, and
// whatever it takes rebuilds byte for byte.
func TestDeltaOf(t *testing.T) {
	t.Parallel()
	l := session.New(session.Header{ID: "s"}, session.Options{})
	// (Invalid UTF-8 is not in the list: json.Marshal writes it as
	// \ufffd, which decodes to a text that re-encodes differently, so such a
	// delta is stored as an event like any other.)
	for _, text := range []string{"", "plain", `q"uote\`, "tab\there", "ünï ✓", "\u2028\u2029", "<&> code", "\x00"} {
		for _, kind := range chunkKinds {
			e, err := l.Append(session.TypeAssistantChunk, session.AssistantChunk{Turn: 3, Step: 12, Chunk: llm.Chunk{Type: kind, Index: 2, Text: text}})
			if err != nil {
				t.Fatal(err)
			}
			k, got, ok := deltaOf(e)
			if !ok {
				t.Errorf("%q (%s): not read as a delta: %s", text, kind, e.Data)
				continue
			}
			if !bytes.Equal(deltaData(k, got), e.Data) || k != (runKey{turn: 3, step: 12, index: 2, chunk: kind}) {
				t.Errorf("%q (%s): read %+v %q from %s", text, kind, k, got, e.Data)
			}
		}
	}
	for _, data := range []string{
		`{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a"}}`,
		`{"turn":-1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a"}}`,
	} {
		if _, _, ok := deltaOf(session.Event{Type: session.TypeAssistantChunk, Data: []byte(data)}); !ok {
			t.Errorf("%s: not read as a delta", data)
		}
	}
	for _, data := range []string{
		`{"turn":1, "step":1,"chunk":{"type":"text-delta","index":0,"text":"a"}}`,
		`{"step":1,"turn":1,"chunk":{"type":"text-delta","index":0,"text":"a"}}`,
		`{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a","extra":1}}`,
		`{"turn":1,"step":1,"chunk":{"type":"block-start","index":0,"text":"a"}}`,
		`{"turn":01,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a"}}`,
		`{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"\u0061"}}`,
		`{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a"}}}`,
	} {
		if _, _, ok := deltaOf(session.Event{Type: session.TypeAssistantChunk, Data: []byte(data)}); ok {
			t.Errorf("%s: read as a delta", data)
		}
	}
}

// TestExtendingATailLeavesItAsItWas: a batch extends the session's open
// group in place of a copy, so the group it extended must read the same
// after, and a retry (the batch failed) extends it again with other
// events without the first attempt's bytes showing.
func TestExtendingATailLeavesItAsItWas(t *testing.T) {
	t.Parallel()
	l := session.New(session.Header{ID: "s"}, session.Options{})
	batch := func(n int, text string) []session.Event {
		var evs []session.Event
		for i := range n {
			evs = append(evs, delta(t, l, 1, fmt.Sprintf("%s%d ", text, i)))
		}
		return evs
	}
	first := batch(3, "a")
	_, _, tail, err := encodeEvents(first, nil)
	if err != nil || tail == nil {
		t.Fatalf("first batch: tail %v, %v", tail, err)
	}
	kept := bytes.Clone(tail.body)
	decode := func(r *eventRow) []session.Event {
		t.Helper()
		var out []session.Event
		row := storedRow{seq: r.seq, n: r.n, time: r.time, typ: r.typ, meta: r.meta, body: r.body}
		if err := row.events(func(ev session.Event) error { out = append(out, ev); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// The failed attempt, then the retry with the events the log has by
	// then (the same seqs, other text: what a reload could bring).
	failed := batch(2, "failed")
	if up, _, _, err := encodeEvents(failed, tail); err != nil || up == nil {
		t.Fatalf("failed attempt: %v, %v", up, err)
	}
	if !bytes.Equal(tail.body, kept) {
		t.Fatal("extending the tail changed it")
	}
	retry := make([]session.Event, len(failed))
	for i, ev := range failed {
		ev.Data = []byte(fmt.Sprintf(`{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"retry%d "}}`, i))
		retry[i] = ev
	}
	up, rows, _, err := encodeEvents(retry, tail)
	if err != nil || up == nil || len(rows) != 0 {
		t.Fatalf("retry: update %v rows %d, %v", up, len(rows), err)
	}
	got := decode(up)
	want := append(append([]session.Event{}, first...), retry...)
	if len(got) != len(want) {
		t.Fatalf("%d events in the group, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Seq != want[i].Seq || !bytes.Equal(got[i].Data, want[i].Data) {
			t.Fatalf("event %d: %d %s, want %d %s", i, got[i].Seq, got[i].Data, want[i].Seq, want[i].Data)
		}
	}
}

// TestRowArenaKeepsEachBatchRow: the bodies compressed into one batch's
// arena never overlap (a later one, or the arena growing, leaves the
// earlier ones as they were), and each decodes to its group.
func TestRowArenaKeepsEachBatchRow(t *testing.T) {
	t.Parallel()
	var arena rowArena
	var bodies, stored [][]byte
	for i, n := range []int{200, 5000, 90 << 10, 300} { // the third outgrows the arena
		body := bytes.Repeat([]byte(fmt.Sprintf("group %d, entry %d; ", i, n)), n/20)
		c, meta := compressGroup(body, &arena)
		if meta != metaS2 {
			t.Fatalf("body %d stored as %q, want compressed", i, meta)
		}
		bodies, stored = append(bodies, body), append(stored, c)
	}
	for i := range stored {
		got, err := decompressGroup(int64(i), stored[i], nil)
		if err != nil || !bytes.Equal(got, bodies[i]) {
			t.Fatalf("body %d after the batch: %d bytes, %v", i, len(got), err)
		}
	}
}
