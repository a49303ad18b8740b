package models

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"harness/internal/session"
)

// CreateSessionWithLog stores the row and the whole log at once (a head of
// 0 included), and the batched writer continues the stored log.
func TestCreateSessionWithLog(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *DB) {
		s := newTestStore(t, db, WriterOptions{})
		ctx := ctxTimeout(t, 20*time.Second)
		for _, n := range []int{0, 1, 7} {
			evs := make([]session.Event, n)
			for i := range evs {
				evs[i] = variedEvent("imp", int64(i))
			}
			row := &Session{OwnerID: "o", Title: "imported"}
			if err := s.CreateSessionWithLog(ctx, row, evs); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetSession(ctx, row.ID)
			if err != nil || got.Head != int64(n)-1 || got.Title != "imported" {
				t.Fatalf("%d events: row %+v %v", n, got, err)
			}
			stored, err := s.EventsSince(ctx, row.ID, -1, 0)
			if err != nil || len(stored) != n {
				t.Fatalf("%d events stored, want %d (%v)", len(stored), n, err)
			}
			for i := range stored {
				a, b := mustMarshal(t, stored[i]), mustMarshal(t, evs[i])
				if !bytes.Equal(a, b) {
					t.Fatalf("seq %d:\n%s\n%s", i, a, b)
				}
			}
			s.W.Enqueue(row.ID, variedEvent(row.ID, int64(n)))
			if err := s.W.Flush(ctx, row.ID); err != nil {
				t.Fatalf("the writer does not continue the stored log: %v", err)
			}
			if head, err := s.Head(ctx, row.ID); err != nil || head != int64(n) {
				t.Fatalf("head %d %v, want %d", head, err, n)
			}
		}
	})
}

// All or nothing: when an event cannot be stored, the row is not stored
// either (the transaction a crash would also leave uncommitted).
func TestCreateSessionWithLogAtomic(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *DB) {
		s := newTestStore(t, db, WriterOptions{})
		ctx := ctxTimeout(t, 20*time.Second)
		const id = "atomic-import"
		evs := make([]session.Event, 6)
		for i := range evs {
			evs[i] = variedEvent(id, int64(i))
		}
		// A stray row where the log's last row will go, in the log the
		// session will get, makes the last insert fail.
		_, rows, _, err := encodeEvents(evs, nil)
		if err != nil || len(rows) < 2 {
			t.Fatalf("%d rows, %v", len(rows), err)
		}
		if err := db.W.Create(&LogRow{LogKey: nextLogKey(t, db), Seq: rows[len(rows)-1].seq, N: 1, Time: 1, Type: "turn/start", Body: []byte(`{}`)}).Error; err != nil {
			t.Fatal(err)
		}
		if err := s.CreateSessionWithLog(ctx, &Session{ID: id, OwnerID: "o"}, evs); err == nil {
			t.Fatal("stored over a conflicting event row")
		}
		if _, err := s.GetSession(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the row was stored: %v", err)
		}
		var n int64
		if err := db.R.Model(&LogRow{}).Count(&n).Error; err != nil || n != 1 {
			t.Fatalf("%d event rows (%v), want only the stray one", n, err)
		}
		// A log that is not contiguous is refused before anything is written.
		evs[2].Seq = 9
		if err := s.CreateSessionWithLog(ctx, &Session{ID: "gap", OwnerID: "o"}, evs); err == nil {
			t.Fatal("a seq gap was stored")
		}
		if _, err := s.GetSession(ctx, "gap"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the row was stored: %v", err)
		}
	})
}

// An import interrupted while its transaction runs (here: its context is
// cancelled; a killed process leaves the same uncommitted transaction)
// stores either the whole session or nothing.
func TestCreateSessionWithLogInterrupted(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *DB) {
		s := newTestStore(t, db, WriterOptions{})
		evs := make([]session.Event, 20000)
		for i := range evs {
			evs[i] = variedEvent("big", int64(i))
		}
		for _, after := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond} {
			ctx, cancel := context.WithTimeout(t.Context(), after)
			row := &Session{OwnerID: "o"}
			err := s.CreateSessionWithLog(ctx, row, evs)
			cancel()
			var n int64
			if cerr := db.R.Model(&LogRow{}).Where("log_key = (SELECT log_key FROM sessions WHERE id = ?)", row.ID).Count(&n).Error; cerr != nil {
				t.Fatal(cerr)
			}
			_, gerr := s.GetSession(t.Context(), row.ID)
			switch {
			case err == nil && (gerr != nil || n != int64(len(evs))):
				t.Fatalf("after %v: stored, but row %v and %d events", after, gerr, n)
			case err != nil && (!errors.Is(gerr, ErrNotFound) || n != 0):
				t.Fatalf("after %v: refused (%v), but row %v and %d events remain", after, err, gerr, n)
			}
		}
	})
}

// nextLogKey is the log key the next session created in db gets.
func nextLogKey(t *testing.T, db *DB) int64 {
	t.Helper()
	var key int64
	q := `SELECT COALESCE(MAX(log_key), 0) + 1 FROM sessions`
	if db.Driver == DriverPostgres {
		// Taking a value moves the sequence on: the next is one more.
		q = `SELECT nextval('` + logKeySeq + `') + 1`
	}
	if err := db.W.Raw(q).Scan(&key).Error; err != nil {
		t.Fatal(err)
	}
	return key
}
