package models

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"harness/internal/llm"
	"harness/internal/session"
)

func TestSessionCRUD(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		s := newTestStore(t, db, WriterOptions{})
		ctx := ctxTimeout(t, 10*time.Second)
		sess := mustCreate(t, s, &Session{OwnerID: "alice", Title: "first", Workspace: "/w", Provider: "p", Model: "m"})
		if sess.ID == "" || sess.Head != -1 {
			t.Fatalf("created = %+v, want an id and head -1", sess)
		}
		if err := s.CreateSession(ctx, &Session{ID: sess.ID, OwnerID: "bob"}); !errors.Is(err, ErrExists) {
			t.Errorf("duplicate create = %v, want ErrExists", err)
		}
		if err := s.CreateSession(ctx, &Session{}); err == nil {
			t.Error("create without owner succeeded")
		}

		got, err := s.GetSession(ctx, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Title != "first" || got.OwnerID != "alice" || got.Head != -1 || !got.CreatedAt.Equal(sess.CreatedAt) {
			t.Errorf("get = %+v, want %+v", got, sess)
		}
		if _, err := s.GetSession(ctx, "missing"); !errors.Is(err, ErrNotFound) {
			t.Errorf("get missing = %v, want ErrNotFound", err)
		}
		if h, err := s.Head(ctx, "missing"); !errors.Is(err, ErrNotFound) {
			t.Errorf("head of missing = %d, %v, want ErrNotFound", h, err)
		}

		for _, tc := range []struct {
			name    string
			id      string
			update  SessionUpdate
			wantErr error
		}{
			{"fields", sess.ID, SessionUpdate{Title: new("renamed"), Archived: new(true), Mode: new("auto"), PendingInbox: new(2)}, nil},
			{"nothing", "missing", SessionUpdate{}, nil},
			{"unknown session", "missing", SessionUpdate{Title: new("x")}, ErrNotFound},
		} {
			err := s.UpdateSession(ctx, tc.id, tc.update)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("%s: update = %v, want %v", tc.name, err, tc.wantErr)
			}
		}
		got, _ = s.GetSession(ctx, sess.ID)
		if got.Title != "renamed" || !got.Archived || got.Mode != "auto" || got.PendingInbox != 2 || got.Head != -1 {
			t.Errorf("after update = %+v", got)
		}
		if !got.UpdatedAt.After(sess.UpdatedAt) {
			t.Errorf("updated_at not bumped: %v -> %v", sess.UpdatedAt, got.UpdatedAt)
		}
	})
}

// TestUpdateSessionChangesOnlyWhatIsSet: each field of a SessionUpdate,
// set alone (to its zero value too), changes that column and no other.
func TestUpdateSessionChangesOnlyWhatIsSet(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		s := newTestStore(t, db, WriterOptions{})
		ctx := ctxTimeout(t, 10*time.Second)
		at := time.Date(2021, 3, 4, 5, 6, 7, 891234000, time.UTC)
		for _, tc := range []struct {
			name   string
			update SessionUpdate
			want   func(*Session) // applies the change to the row as created
			bumped bool           // updated_at moves to now
		}{
			{"title", SessionUpdate{Title: new("renamed")}, func(r *Session) { r.Title = "renamed" }, true},
			{"empty title", SessionUpdate{Title: new("")}, func(r *Session) { r.Title = "" }, true},
			{"archived", SessionUpdate{Archived: new(true)}, func(r *Session) { r.Archived = true }, true},
			{"unarchived", SessionUpdate{Archived: new(false)}, func(r *Session) { r.Archived = false }, true},
			{"mode", SessionUpdate{Mode: new("read-only")}, func(r *Session) { r.Mode = "read-only" }, true},
			{"route", SessionUpdate{Provider: new("q"), Model: new("n")}, func(r *Session) { r.Provider, r.Model = "q", "n" }, true},
			{"model alone", SessionUpdate{Model: new("")}, func(r *Session) { r.Model = "" }, true},
			{"pending inbox", SessionUpdate{PendingInbox: new(3)}, func(r *Session) { r.PendingInbox = 3 }, true},
			{"pending inbox zero", SessionUpdate{PendingInbox: new(0)}, func(r *Session) { r.PendingInbox = 0 }, true},
			{"updated_at", SessionUpdate{UpdatedAt: new(at)}, func(r *Session) { r.UpdatedAt = at.Truncate(time.Microsecond) }, false},
			{"title at a time", SessionUpdate{Title: new("t"), UpdatedAt: new(at)}, func(r *Session) {
				r.Title, r.UpdatedAt = "t", at.Truncate(time.Microsecond)
			}, false},
			{"nothing", SessionUpdate{}, func(*Session) {}, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				// Every column starts away from the value the case sets.
				created := mustCreate(t, s, &Session{OwnerID: "alice", Title: "first", Workspace: "/w", Provider: "p", Model: "m",
					Mode: "ask", Archived: tc.name == "unarchived", PendingInbox: 1,
					UpdatedAt: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)})
				before, err := s.GetSession(ctx, created.ID)
				if err != nil {
					t.Fatal(err)
				}
				if err := s.UpdateSession(ctx, created.ID, tc.update); err != nil {
					t.Fatal(err)
				}
				got, err := s.GetSession(ctx, created.ID)
				if err != nil {
					t.Fatal(err)
				}
				want := *before
				tc.want(&want)
				if tc.bumped {
					if !got.UpdatedAt.After(before.UpdatedAt) {
						t.Errorf("updated_at = %v, want bumped from %v", got.UpdatedAt, before.UpdatedAt)
					}
					want.UpdatedAt = got.UpdatedAt
				}
				if !got.UpdatedAt.Equal(want.UpdatedAt) {
					t.Errorf("updated_at = %v, want %v", got.UpdatedAt, want.UpdatedAt)
				}
				got.UpdatedAt, want.UpdatedAt = time.Time{}, time.Time{}
				got.CreatedAt, want.CreatedAt = time.Time{}, time.Time{}
				if *got != want {
					t.Errorf("after %s:\n got  %+v\n want %+v", tc.name, *got, want)
				}
			})
		}
	})
}

func TestDeleteSession(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		var reported errorLog
		s := newTestStore(t, db, WriterOptions{OnError: reported.add})
		ctx := ctxTimeout(t, 10*time.Second)
		doomed := mustCreate(t, s, &Session{OwnerID: "alice"}).ID
		kept := mustCreate(t, s, &Session{OwnerID: "alice"}).ID
		for _, id := range []string{doomed, kept} {
			for seq := range int64(20) {
				s.W.Enqueue(id, variedEvent(id, seq))
			}
			if err := db.W.Create(&Member{SessionID: id, UserID: "bob", Role: "viewer"}).Error; err != nil {
				t.Fatal(err)
			}
			if err := db.W.Create(&ShareLink{ID: uuid.NewString(), SessionID: id, TokenHash: "hash-" + id}).Error; err != nil {
				t.Fatal(err)
			}
		}
		if err := s.W.FlushAll(ctx); err != nil {
			t.Fatal(err)
		}

		keys := map[string]int64{}
		for _, id := range []string{doomed, kept} {
			sess, err := s.GetSession(ctx, id)
			if err != nil || sess.LogKey == 0 {
				t.Fatalf("session %s: log key %v", id, err)
			}
			keys[id] = sess.LogKey
		}
		if err := s.DeleteSession(ctx, doomed); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetSession(ctx, doomed); !errors.Is(err, ErrNotFound) {
			t.Errorf("get deleted = %v", err)
		}
		count := func(model any, id string) int64 {
			var n int64
			q := db.R.Model(model).Where("session_id = ?", id)
			if _, ok := model.(*LogRow); ok {
				q = db.R.Model(model).Where("log_key = ?", keys[id])
			}
			if err := q.Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		for _, m := range []any{&LogRow{}, &Member{}, &ShareLink{}} {
			if n := count(m, doomed); n != 0 {
				t.Errorf("%T rows left for the deleted session: %d", m, n)
			}
			if n := count(m, kept); n == 0 {
				t.Errorf("%T rows of the other session deleted", m)
			}
		}
		if err := s.DeleteSession(ctx, doomed); !errors.Is(err, ErrNotFound) {
			t.Errorf("second delete = %v, want ErrNotFound", err)
		}

		// A late event of the deleted session is refused, not orphaned.
		s.W.Enqueue(doomed, variedEvent(doomed, 20))
		if err := s.W.Flush(ctx, doomed); !errors.Is(err, ErrNotFound) {
			t.Errorf("flush of late event = %v, want ErrNotFound", err)
		}
		if n := count(&LogRow{}, doomed); n != 0 {
			t.Errorf("late event stored: %d rows", n)
		}
	})
}

// userMessage is a user/message event with the given text and source kind.
func userMessage(seq int64, text string, kind llm.SourceKind) session.Event {
	return ev(seq, session.TypeUserMessage, llm.Message{ID: fmt.Sprint("u", seq), Role: llm.RoleUser,
		Content: []llm.ContentBlock{llm.Text(text)}, Source: llm.Source{Kind: kind}})
}

func TestListSessions(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		s := newTestStore(t, db, WriterOptions{})
		ctx := ctxTimeout(t, 20*time.Second)
		base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		mk := func(id, owner, title string, minutes int, archived bool) {
			t.Helper()
			mustCreate(t, s, &Session{ID: id, OwnerID: owner, Title: title, CreatedAt: base,
				UpdatedAt: base.Add(time.Duration(minutes) * time.Minute)})
			if archived {
				if err := s.UpdateSession(ctx, id, SessionUpdate{Archived: new(true),
					UpdatedAt: new(base.Add(time.Duration(minutes) * time.Minute))}); err != nil {
					t.Fatal(err)
				}
			}
		}
		mk("a1", "alice", "Refactor the parser", 1, false)
		mk("a2", "alice", "Write 100% coverage_tests", 2, false)
		mk("a3", "alice", "Deploy notes", 3, true)
		mk("a4", "alice", "tie one", 4, false)
		mk("a5", "alice", "tie two", 4, false) // same updated_at as a4: id breaks the tie
		mk("a6", "alice", "Ünïcode Títle", 5, false)
		mk("b1", "bob", "Bob's shared parser work", 6, false)
		mk("b2", "bob", "Bob private", 7, false)
		if err := db.W.Create(&Member{SessionID: "b1", UserID: "alice", Role: "collaborator"}).Error; err != nil {
			t.Fatal(err)
		}
		// Message text is searchable; plugin messages and reasoning are not.
		msgs := map[string][]session.Event{
			"a1": {userMessage(0, "Please look at the FLAMINGO module", llm.SourceUser)},
			"a4": {userMessage(0, "runtime context mentions flamingo", llm.SourcePlugin)},
			"a5": {ev(0, session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 1, Message: llm.Message{
				ID: "x", Role: llm.RoleAssistant, Source: llm.Source{Kind: llm.SourceModel},
				Content: []llm.ContentBlock{{Type: llm.BlockReasoning, Text: "thinking about flamingo"}, llm.Text("The answer is «Zebra» <ok>")}}})},
		}
		for id, evs := range msgs {
			for _, e := range evs {
				s.W.Enqueue(id, e)
			}
		}
		if err := s.W.FlushAll(ctx); err != nil {
			t.Fatal(err)
		}
		// Writing events moved a1, a4, a5 to the top; restore the planned
		// order so the expectations below read simply.
		for id, m := range map[string]int{"a1": 1, "a4": 4, "a5": 4} {
			if err := s.UpdateSession(ctx, id, SessionUpdate{UpdatedAt: new(base.Add(time.Duration(m) * time.Minute))}); err != nil {
				t.Fatal(err)
			}
		}

		ids := func(rows []Session) []string {
			out := []string{}
			for _, r := range rows {
				out = append(out, r.ID)
			}
			return out
		}
		yes, no := true, false
		for _, tc := range []struct {
			name string
			q    ListQuery
			want []string
		}{
			{"own, newest first, ties by id desc", ListQuery{OwnerID: "alice"}, []string{"a6", "a5", "a4", "a3", "a2", "a1"}},
			{"with shared", ListQuery{OwnerID: "alice", IncludeShared: true}, []string{"b1", "a6", "a5", "a4", "a3", "a2", "a1"}},
			{"all", ListQuery{All: true}, []string{"b2", "b1", "a6", "a5", "a4", "a3", "a2", "a1"}},
			{"archived only", ListQuery{OwnerID: "alice", Archived: &yes}, []string{"a3"}},
			{"not archived", ListQuery{OwnerID: "alice", Archived: &no}, []string{"a6", "a5", "a4", "a2", "a1"}},
			{"title search, case-insensitive", ListQuery{OwnerID: "alice", IncludeShared: true, Query: "PARSER"}, []string{"b1", "a1"}},
			{"message text search", ListQuery{OwnerID: "alice", Query: "flamingo"}, []string{"a1"}},
			{"assistant text search", ListQuery{OwnerID: "alice", Query: "«zebra» <OK>"}, []string{"a5"}},
			{"wildcards are literal", ListQuery{OwnerID: "alice", Query: "100%"}, []string{"a2"}},
			{"underscore is literal", ListQuery{OwnerID: "alice", Query: "e_t"}, []string{"a2"}},
			{"percent alone matches literally", ListQuery{OwnerID: "alice", Query: "%"}, []string{"a2"}},
			{"no match", ListQuery{OwnerID: "alice", Query: "nothing like this"}, []string{}},
			{"other owner's private session hidden", ListQuery{OwnerID: "alice", IncludeShared: true, Query: "private"}, []string{}},
		} {
			rows, next, err := s.ListSessions(ctx, tc.q)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if got := ids(rows); !slices.Equal(got, tc.want) || next != nil {
				t.Errorf("%s: got %v (next %v), want %v", tc.name, got, next, tc.want)
			}
		}
		if db.Driver == DriverPostgres {
			// ILIKE folds non-ASCII case; SQLite's LIKE folds ASCII only.
			if rows, _, _ := s.ListSessions(ctx, ListQuery{OwnerID: "alice", Query: "ÜNÏCODE"}); len(rows) != 1 {
				t.Errorf("unicode title search found %v", ids(rows))
			}
		}
		if _, _, err := s.ListSessions(ctx, ListQuery{}); err == nil {
			t.Error("list without owner or All succeeded")
		}

		// Keyset paging, through the tie.
		for _, limit := range []int{1, 2, 3, 7} {
			var got []string
			q := ListQuery{All: true, Limit: limit}
			for pages := 0; ; pages++ {
				rows, next, err := s.ListSessions(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				if len(rows) > limit {
					t.Fatalf("limit %d: page of %d", limit, len(rows))
				}
				got = append(got, ids(rows)...)
				if next == nil {
					break
				}
				if pages > 10 {
					t.Fatalf("limit %d: paging does not end", limit)
				}
				q.Before = next
			}
			if want := []string{"b2", "b1", "a6", "a5", "a4", "a3", "a2", "a1"}; !slices.Equal(got, want) {
				t.Errorf("limit %d: paged %v, want %v", limit, got, want)
			}
		}

		// Appending events bumps updated_at: the session moves to the top.
		s.W.Enqueue("a2", variedEvent("a2", 0))
		if err := s.W.Flush(ctx, "a2"); err != nil {
			t.Fatal(err)
		}
		rows, _, err := s.ListSessions(ctx, ListQuery{OwnerID: "alice", Limit: 1})
		if err != nil || len(rows) != 1 || rows[0].ID != "a2" {
			t.Errorf("after append, newest = %v (%v), want a2", ids(rows), err)
		}
	})
}

func TestSessionsWithPendingInbox(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		s := newTestStore(t, db, WriterOptions{})
		ctx := t.Context()
		for _, id := range []string{"p1", "p2", "p3"} {
			mustCreate(t, s, &Session{ID: id, OwnerID: "o"})
		}
		for id, n := range map[string]int{"p1": 1, "p3": 4} {
			if err := s.UpdateSession(ctx, id, SessionUpdate{PendingInbox: new(n)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.UpdateSession(ctx, "p1", SessionUpdate{UpdatedAt: new(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))}); err != nil {
			t.Fatal(err)
		}
		rows, err := s.SessionsWithPendingInbox(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, r.ID)
		}
		if !slices.Equal(got, []string{"p1", "p3"}) {
			t.Errorf("pending = %v, want [p1 p3]", got)
		}
	})
}

func TestSummary(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		s := newTestStore(t, db, WriterOptions{})
		ctx := ctxTimeout(t, 10*time.Second)
		id := mustCreate(t, s, &Session{OwnerID: "o", Title: "sum", ParentID: "par"}).ID
		empty, err := s.Summary(ctx, id)
		if err != nil || empty.Head != -1 || empty.Events != 0 || empty.LastActivity != 0 {
			t.Fatalf("empty summary = %+v, %v", empty, err)
		}
		liveLog(t, s, id, func(t *testing.T, l *session.Log) {
			for turn := 1; turn <= 2; turn++ {
				ev, err := l.Append(session.TypeTurnStart, session.TurnStart{Turn: turn})
				must(t, ev, err)
				ev, err = l.Append(session.TypeStepStart, session.StepBoundary{Turn: turn, Step: 1})
				must(t, ev, err)
				ev, err = l.AppendSurface(session.TypeUserMessage, llm.UserText("hi", llm.Source{Kind: llm.SourceUser}), session.Append(), nil)
				must(t, ev, err)
				ev, err = l.AppendSurface(session.TypeAssistantMessage, session.AssistantMessage{Turn: turn, Step: 1,
					Message: llm.Message{ID: fmt.Sprint("a", turn), Role: llm.RoleAssistant, Content: []llm.ContentBlock{llm.Text("yo")},
						Source: llm.Source{Kind: llm.SourceModel, Provider: "p", Model: "m"}},
					Usage: &llm.Usage{InputTokens: 100, OutputTokens: 10, CacheReadTokens: 5}}, session.Append(), []int64{})
				must(t, ev, err)
				ev, err = l.Append(session.TypeStepEnd, session.StepBoundary{Turn: turn, Step: 1})
				must(t, ev, err)
				ev, err = l.Append(session.TypeTurnEnd, session.TurnEnd{Turn: turn, Reason: session.TurnEndReason{Kind: session.ReasonCompleted}})
				must(t, ev, err)
			}
		})
		sum, err := s.Summary(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want := llm.Usage{InputTokens: 200, OutputTokens: 20, CacheReadTokens: 10}
		if sum.Head != 11 || sum.Events != 12 || sum.Turns != 2 || sum.Messages != 4 || sum.Usage != want ||
			sum.LastActivity != 1_700_000_000_000 || sum.Title != "sum" || sum.ParentID != "par" || sum.OwnerID != "o" {
			t.Errorf("summary = %+v", sum)
		}
		if _, err := s.Summary(ctx, "missing"); !errors.Is(err, ErrNotFound) {
			t.Errorf("summary of missing = %v", err)
		}
	})
}
