package models

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"harness/internal/session"
	"harness/internal/testkit/poll"
)

func TestWriterRoundTrip10k(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		const sessions, perSession = 20, 500
		s := newTestStore(t, db, WriterOptions{})
		ids := make([]string, sessions)
		for i := range ids {
			ids[i] = mustCreate(t, s, &Session{OwnerID: "owner"}).ID
		}
		var wg sync.WaitGroup
		for g := range sessions {
			wg.Go(func() {
				for seq := range int64(perSession) {
					s.W.Enqueue(ids[g], variedEvent(ids[g], seq))
					if seq%97 == 0 {
						time.Sleep(time.Millisecond) // shapes load: spreads the session over several batches
					}
				}
			})
		}
		wg.Wait()
		if err := s.W.FlushAll(ctxTimeout(t, 30*time.Second)); err != nil {
			t.Fatalf("flush all: %v", err)
		}

		for _, id := range ids {
			raw, err := s.EventsRaw(t.Context(), id, -1, 0)
			if err != nil {
				t.Fatal(err)
			}
			evs, err := s.EventsSince(t.Context(), id, -1, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(raw) != perSession || len(evs) != perSession {
				t.Fatalf("session %s: %d raw, %d decoded events, want %d", id, len(raw), len(evs), perSession)
			}
			for i, r := range raw {
				want := variedEvent(id, int64(i))
				wantBody := mustMarshal(t, want)
				if r.Seq != int64(i) || r.Type != string(want.Type) || !bytes.Equal(r.Body, wantBody) {
					t.Fatalf("session %s row %d = {%d %s %s}, want {%d %s %s}", id, i, r.Seq, r.Type, r.Body, i, want.Type, wantBody)
				}
				if got := mustMarshal(t, evs[i]); !bytes.Equal(got, r.Body) {
					t.Fatalf("session %s event %d re-encodes to %s, stored %s", id, i, got, r.Body)
				}
				if !reflect.DeepEqual(evs[i], want) {
					t.Fatalf("session %s event %d decodes to %+v, want %+v", id, i, evs[i], want)
				}
			}
			head, err := s.Head(t.Context(), id)
			if err != nil || head != perSession-1 {
				t.Fatalf("head of %s = %d, %v; want %d", id, head, err, perSession-1)
			}
		}
		st := s.W.Stats()
		if st.Events != sessions*perSession || st.Pending != 0 || st.Batches == 0 || st.Errors != 0 {
			t.Errorf("stats = %+v", st)
		}
		if st.MeanLatency <= 0 {
			t.Errorf("mean latency not measured: %+v", st)
		}
	})
}

func TestWriterWritesWithoutFlush(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		s := newTestStore(t, db, WriterOptions{MaxDelay: 5 * time.Millisecond})
		id := mustCreate(t, s, &Session{OwnerID: "o"}).ID
		for seq := range int64(3) {
			s.W.Enqueue(id, variedEvent(id, seq))
		}
		// No Flush: the writer commits on its own once MaxDelay passed.
		ctx := ctxTimeout(t, 10*time.Second)
		for {
			head, err := s.Head(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if head == 2 {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("events never written without a flush (head %d)", head)
			case <-time.After(2 * time.Millisecond):
			}
		}
	})
}

func TestWriterMaxBatch(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		s := newTestStore(t, db, WriterOptions{MaxBatch: 10})
		a := mustCreate(t, s, &Session{OwnerID: "o"}).ID
		b := mustCreate(t, s, &Session{OwnerID: "o"}).ID
		for seq := range int64(95) {
			s.W.Enqueue(a, variedEvent(a, seq))
			s.W.Enqueue(b, variedEvent(b, seq))
		}
		if err := s.W.FlushAll(ctxTimeout(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		st := s.W.Stats()
		if st.Events != 190 || st.Batches < 19 || st.LastBatch > 10 {
			t.Errorf("stats = %+v, want 190 events in batches of at most 10", st)
		}
		for _, id := range []string{a, b} {
			if evs, _ := s.EventsRaw(t.Context(), id, -1, 0); len(evs) != 95 {
				t.Errorf("session %s has %d events, want 95", id, len(evs))
			}
		}
	})
}

// errorLog collects OnError reports.
type errorLog struct {
	mu   sync.Mutex
	errs map[string][]error
}

func (l *errorLog) add(id string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.errs == nil {
		l.errs = map[string][]error{}
	}
	l.errs[id] = append(l.errs[id], err)
}

func (l *errorLog) get(id string) []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs[id]...)
}

func TestWriterRefusesNonContiguousEvents(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		var reported errorLog
		s := newTestStore(t, db, WriterOptions{OnError: reported.add})
		ctx := ctxTimeout(t, 10*time.Second)
		bad := mustCreate(t, s, &Session{OwnerID: "o"}).ID
		good := mustCreate(t, s, &Session{OwnerID: "o"}).ID
		for seq := range int64(5) {
			s.W.Enqueue(bad, variedEvent(bad, seq))
		}
		if err := s.W.Flush(ctx, bad); err != nil {
			t.Fatal(err)
		}

		for _, tc := range []struct {
			name string
			seqs []int64
		}{
			{"gap", []int64{7, 8}},
			{"duplicate", []int64{3, 4, 5}},
			{"hole inside the batch", []int64{5, 6, 8}},
		} {
			// The good session's events share the batch and are written.
			goodHead, _ := s.Head(ctx, good)
			s.W.Enqueue(good, variedEvent(good, goodHead+1))
			for _, seq := range tc.seqs {
				s.W.Enqueue(bad, variedEvent(bad, seq))
			}
			err := s.W.Flush(ctx, bad)
			if !errors.Is(err, ErrSeqMismatch) {
				t.Fatalf("%s: flush = %v, want ErrSeqMismatch", tc.name, err)
			}
			if err := s.W.Flush(ctx, good); err != nil {
				t.Fatalf("%s: other session: %v", tc.name, err)
			}
			if h, _ := s.Head(ctx, good); h != goodHead+1 {
				t.Errorf("%s: other session head %d, want %d", tc.name, h, goodHead+1)
			}
			// Nothing of the refused events was stored.
			raw, err := s.EventsRaw(ctx, bad, -1, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(raw) != 5 || raw[4].Seq != 4 || !bytes.Equal(raw[3].Body, mustMarshal(t, variedEvent(bad, 3))) {
				t.Fatalf("%s: stored log changed: %d events", tc.name, len(raw))
			}
			if h, _ := s.Head(ctx, bad); h != 4 {
				t.Errorf("%s: head %d, want 4", tc.name, h)
			}
			// The refusal is sticky until the log is reloaded.
			if err := s.W.Flush(ctx, bad); !errors.Is(err, ErrSeqMismatch) {
				t.Errorf("%s: second flush = %v, want the sticky refusal", tc.name, err)
			}
			s.W.Reset(bad)
		}
		if got := reported.get(bad); len(got) != 3 || !errors.Is(got[0], ErrSeqMismatch) {
			t.Errorf("OnError reports = %v, want 3 seq mismatches", got)
		}
		if got := reported.get(good); len(got) != 0 {
			t.Errorf("good session reported %v", got)
		}

		// After the reset the log continues at the stored head.
		s.W.Enqueue(bad, variedEvent(bad, 5))
		if err := s.W.Flush(ctx, bad); err != nil {
			t.Fatalf("flush after reset: %v", err)
		}
		if h, _ := s.Head(ctx, bad); h != 5 {
			t.Errorf("head after reset = %d, want 5", h)
		}
		if st := s.W.Stats(); st.Refused != 8 {
			t.Errorf("refused = %d, want 8", st.Refused)
		}
	})
}

func TestWriterRefusesUnknownSession(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		var reported errorLog
		s := newTestStore(t, db, WriterOptions{OnError: reported.add})
		s.W.Enqueue("no-such-session", variedEvent("x", 0))
		err := s.W.Flush(ctxTimeout(t, 10*time.Second), "no-such-session")
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("flush = %v, want ErrNotFound", err)
		}
		if got := reported.get("no-such-session"); len(got) != 1 {
			t.Errorf("reports = %v", got)
		}
		var n int64
		if err := db.R.Model(&LogRow{}).Count(&n).Error; err != nil || n != 0 {
			t.Errorf("events stored: %d, %v", n, err)
		}
	})
}

// failWrites installs a trigger that makes inserts into events fail while
// fail_ctl.fail is 1, and returns a switch for it.
func failWrites(t *testing.T, db *DB) func(on bool) {
	t.Helper()
	stmts := []string{`CREATE TABLE fail_ctl (fail INTEGER NOT NULL)`, `INSERT INTO fail_ctl VALUES (0)`}
	if db.Driver == DriverPostgres {
		stmts = append(stmts,
			`CREATE FUNCTION fail_events() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				IF (SELECT fail FROM fail_ctl) = 1 THEN RAISE EXCEPTION 'simulated disk failure'; END IF;
				RETURN NEW;
			END $$`,
			`CREATE TRIGGER fail_events BEFORE INSERT ON log_rows FOR EACH ROW EXECUTE FUNCTION fail_events()`)
	} else {
		stmts = append(stmts, `CREATE TRIGGER fail_events BEFORE INSERT ON log_rows
			WHEN (SELECT fail FROM fail_ctl) = 1
			BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END`)
	}
	for _, q := range stmts {
		if err := db.W.Exec(q).Error; err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return func(on bool) {
		v := 0
		if on {
			v = 1
		}
		if err := db.W.Exec("UPDATE fail_ctl SET fail = ?", v).Error; err != nil {
			t.Fatal(err)
		}
	}
}

func TestWriterRetriesAndKeepsFailedWrites(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		var reported errorLog
		s := newTestStore(t, db, WriterOptions{OnError: reported.add, Retries: 2, RetryBackoff: time.Millisecond})
		ctx := ctxTimeout(t, 20*time.Second)
		fail := failWrites(t, db)
		a := mustCreate(t, s, &Session{OwnerID: "o"}).ID
		b := mustCreate(t, s, &Session{OwnerID: "o"}).ID
		s.W.Enqueue(a, variedEvent(a, 0))
		if err := s.W.Flush(ctx, a); err != nil {
			t.Fatal(err)
		}

		fail(true)
		for seq := int64(1); seq <= 3; seq++ {
			s.W.Enqueue(a, variedEvent(a, seq))
		}
		s.W.Enqueue(b, variedEvent(b, 0))
		err := s.W.Flush(ctx, a)
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte("simulated disk failure")) {
			t.Fatalf("flush during failure = %v, want the write error", err)
		}
		if err := s.W.Flush(ctx, b); err == nil {
			t.Fatal("flush of the other session in the failed batch succeeded")
		}
		// (Pending is not checked: each flush starts a new attempt, whose
		// batch is in flight rather than queued. That nothing was dropped is
		// proven below, when all four events land after recovery.)
		st := s.W.Stats()
		if st.Retries < 2 || st.Errors < 1 {
			t.Errorf("stats during failure = %+v, want >= 2 retries and an error", st)
		}
		if got := reported.get(a); len(got) == 0 {
			t.Error("failure not reported through OnError")
		}
		if h, _ := s.Head(ctx, a); h != 0 {
			t.Errorf("head moved to %d during the failure", h)
		}

		// The events stayed queued: once the fault clears, a retry writes
		// them and clears the error.
		fail(false)
		var lastErr error
		if !poll.Wait(t, func() bool {
			lastErr = s.W.Flush(ctx, a)
			return lastErr == nil
		}) {
			t.Fatalf("events never written after recovery: %v", lastErr)
		}
		if err := s.W.Flush(ctx, b); err != nil {
			t.Fatalf("other session after recovery: %v", err)
		}
		raw, err := s.EventsRaw(ctx, a, -1, 0)
		if err != nil || len(raw) != 4 {
			t.Fatalf("session a has %d events (%v), want 4", len(raw), err)
		}
		for i, r := range raw {
			if r.Seq != int64(i) || !bytes.Equal(r.Body, mustMarshal(t, variedEvent(a, int64(i)))) {
				t.Fatalf("row %d wrong after recovery: seq %d", i, r.Seq)
			}
		}
		if h, _ := s.Head(ctx, b); h != 0 {
			t.Errorf("session b head %d, want 0", h)
		}
	})
}

func TestWriterCloseDrains(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		var reported errorLog
		w := NewWriter(testLogger(t), db, WriterOptions{MaxDelay: 50 * time.Millisecond, OnError: reported.add})
		s := NewStore(testLogger(t), db, w)
		id := mustCreate(t, s, &Session{OwnerID: "o"}).ID
		for seq := range int64(300) {
			w.Enqueue(id, variedEvent(id, seq))
		}
		if err := w.Close(ctxTimeout(t, 10*time.Second)); err != nil {
			t.Fatalf("close: %v", err)
		}
		if h, _ := s.Head(t.Context(), id); h != 299 {
			t.Errorf("head after close = %d, want 299", h)
		}
		w.Enqueue(id, variedEvent(id, 300))
		if got := reported.get(id); len(got) != 1 || !errors.Is(got[0], ErrWriterClosed) {
			t.Errorf("enqueue after close reported %v, want ErrWriterClosed", got)
		}
		if err := w.Flush(t.Context(), id); !errors.Is(err, ErrWriterClosed) && err != nil {
			t.Errorf("flush after close = %v", err)
		}
	})
}

func TestWriterCloseGivesUpOnFailingDatabase(t *testing.T) {
	t.Parallel()
	db := openSQLiteTest(t)
	fail := failWrites(t, db)
	w := NewWriter(testLogger(t), db, WriterOptions{Retries: 1, RetryBackoff: time.Millisecond})
	s := NewStore(testLogger(t), db, w)
	id := mustCreate(t, s, &Session{OwnerID: "o"}).ID
	fail(true)
	w.Enqueue(id, variedEvent(id, 0))
	err := w.Close(ctxTimeout(t, 300*time.Millisecond))
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("1 events not written")) {
		t.Fatalf("close = %v, want an error naming the lost event", err)
	}
}

func TestWriterFlushHonoursContext(t *testing.T) {
	t.Parallel()
	db := openSQLiteTest(t)
	fail := failWrites(t, db)
	s := newTestStore(t, db, WriterOptions{Retries: 50, RetryBackoff: 20 * time.Millisecond})
	id := mustCreate(t, s, &Session{OwnerID: "o"}).ID
	fail(true)
	s.W.Enqueue(id, variedEvent(id, 0))
	ctx := ctxTimeout(t, 50*time.Millisecond)
	if err := s.W.Flush(ctx, id); !errors.Is(err, ctx.Err()) || ctx.Err() == nil {
		t.Fatalf("flush = %v, want the context's error", err)
	}
	fail(false)
}

func TestWriterForgetDropsQueuedEvents(t *testing.T) {
	t.Parallel()
	db := openSQLiteTest(t)
	fail := failWrites(t, db)
	s := newTestStore(t, db, WriterOptions{Retries: 1, RetryBackoff: time.Millisecond})
	id := mustCreate(t, s, &Session{OwnerID: "o"}).ID
	fail(true)
	s.W.Enqueue(id, variedEvent(id, 0))
	_ = s.W.Flush(ctxTimeout(t, 10*time.Second), id) // fails, stays queued
	if err := s.DeleteSession(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	fail(false)
	if st := s.W.Stats(); st.Pending != 0 {
		t.Errorf("pending after delete = %d", st.Pending)
	}
	if err := s.W.Flush(t.Context(), id); err != nil {
		t.Errorf("flush of a deleted session = %v", err)
	}
}

// The title column follows the last session/title event of each batch.
func TestWriterKeepsTitleColumn(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		s := newTestStore(t, db, WriterOptions{})
		id := mustCreate(t, s, &Session{OwnerID: "o", Title: "old"}).ID
		title := func(seq int64, text string) session.Event {
			data, _ := json.Marshal(session.SessionTitle{Title: text, Source: session.TitleUser})
			return session.Event{Seq: seq, Time: 1, Type: session.TypeSessionTitle, Data: data}
		}
		s.W.Enqueue(id, title(0, "first"))
		s.W.Enqueue(id, title(1, "second"))
		if err := s.W.Flush(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		row, err := s.GetSession(t.Context(), id)
		if err != nil || row.Title != "second" {
			t.Fatalf("title = %q, %v; want the last one", row.Title, err)
		}
		s.W.Enqueue(id, title(2, strings.Repeat("é", 200)))
		if err := s.W.Flush(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		row, _ = s.GetSession(t.Context(), id)
		if len(row.Title) > 255 || !utf8.ValidString(row.Title) || !strings.HasPrefix(row.Title, "ééé") {
			t.Fatalf("long title stored as %q (%d bytes)", row.Title, len(row.Title))
		}
	})
}

// OnBatch sees every committed transaction.
func TestWriterOnBatch(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var events, batches int
	s := newTestStore(t, openSQLiteTest(t), WriterOptions{OnBatch: func(n int, took time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		events += n
		batches++
		if took <= 0 {
			t.Errorf("commit took %v", took)
		}
	}})
	id := mustCreate(t, s, &Session{OwnerID: "o"}).ID
	for seq := range int64(30) {
		s.W.Enqueue(id, variedEvent(id, seq))
	}
	if err := s.W.Flush(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if events != 30 || batches == 0 || uint64(batches) != s.W.Stats().Batches {
		t.Fatalf("OnBatch saw %d events in %d batches; stats %+v", events, batches, s.W.Stats())
	}
}

// A streaming session committed a few deltas at a time: SQLite extends its
// groups up to maxGroupBytes, PostgreSQL never rewrites a stored group
// longer than pgRewriteMax (each rewrite is a whole new row version), and
// both read back every event.
func TestWriterGroupRewritesAreBounded(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		s := newTestStore(t, db, WriterOptions{})
		sess := mustCreate(t, s, &Session{OwnerID: "owner"})
		l := session.New(session.Header{ID: sess.ID}, session.Options{})
		type stored struct {
			n    int
			size int
		}
		snapshot := func() map[int64]stored {
			rows, err := db.R.Raw(`SELECT seq, n, length(body) FROM log_rows WHERE log_key = (SELECT log_key FROM sessions WHERE id = ?)`, sess.ID).Rows()
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			out := map[int64]stored{}
			for rows.Next() {
				var seq int64
				var r stored
				if err := rows.Scan(&seq, &r.n, &r.size); err != nil {
					t.Fatal(err)
				}
				out[seq] = r
			}
			return out
		}
		var evs []session.Event
		prev := map[int64]stored{}
		largest := 0
		const commits, perCommit = 200, 4
		for range commits {
			for range perCommit {
				// Text S2 cannot shrink, so stored sizes are the groups'.
				sum := sha256.Sum256([]byte(fmt.Sprint(len(evs))))
				e := delta(t, l, 1, hex.EncodeToString(sum[:20]))
				evs = append(evs, e)
				s.W.Enqueue(sess.ID, e)
			}
			if err := s.Flush(t.Context(), sess.ID); err != nil {
				t.Fatal(err)
			}
			now := snapshot()
			for seq, was := range prev {
				if db.Driver == DriverPostgres && was.size > pgRewriteMax && now[seq] != was {
					t.Fatalf("the group at seq %d (%d bytes stored) was rewritten: %+v -> %+v", seq, was.size, was, now[seq])
				}
			}
			for _, r := range now {
				largest = max(largest, r.n)
			}
			prev = now
		}
		got, err := s.EventsSince(t.Context(), sess.ID, -1, 0)
		if err != nil || len(got) != len(evs) {
			t.Fatalf("%d events read back, want %d: %v", len(got), len(evs), err)
		}
		for i := range got {
			if !bytes.Equal(got[i].Data, evs[i].Data) {
				t.Fatalf("event %d: %s, want %s", i, got[i].Data, evs[i].Data)
			}
		}
		// SQLite's groups grow to the run limit across commits.
		if db.Driver == DriverSQLite && largest != maxRun {
			t.Fatalf("largest SQLite group holds %d events, want %d", largest, maxRun)
		}
	})
}
