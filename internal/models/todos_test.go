package models

import (
	"reflect"
	"testing"
	"time"

	"harness/internal/session"
)

// TestLastTodos: the sessions row follows the log's last todo/write, across
// batches and through an import, so LastTodos reads one event; a session
// without one has none.
func TestLastTodos(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		s := newTestStore(t, db, WriterOptions{})
		ctx := ctxTimeout(t, 20*time.Second)
		sess := mustCreate(t, s, &Session{OwnerID: "o"})
		if todos, err := s.LastTodos(ctx, sess.ID); err != nil || todos != nil {
			t.Fatalf("a new session: %v, %v", todos, err)
		}
		list := func(n int) []session.Todo {
			var out []session.Todo
			for i := range n {
				out = append(out, session.Todo{Content: string(rune('a' + i)), Status: "pending"})
			}
			return out
		}
		var evs []session.Event
		for seq := range int64(30) {
			e := variedEvent(sess.ID, seq)
			switch seq {
			case 7:
				e = ev(seq, session.TypeTodoWrite, session.TodoWrite{Todos: list(1)})
			case 21:
				e = ev(seq, session.TypeTodoWrite, session.TodoWrite{Todos: list(3)})
			}
			evs = append(evs, e)
			s.W.Enqueue(sess.ID, e)
			if seq%4 == 0 {
				if err := s.W.Flush(ctx, sess.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := s.W.Flush(ctx, sess.ID); err != nil {
			t.Fatal(err)
		}
		todos, err := s.LastTodos(ctx, sess.ID)
		if err != nil || !reflect.DeepEqual(todos, list(3)) {
			t.Fatalf("after the writer: %+v, %v", todos, err)
		}

		imported := &Session{OwnerID: "o"}
		if err := s.CreateSessionWithLog(ctx, imported, evs[:20]); err != nil {
			t.Fatal(err)
		}
		if todos, err := s.LastTodos(ctx, imported.ID); err != nil || !reflect.DeepEqual(todos, list(1)) {
			t.Fatalf("after an import: %+v, %v", todos, err)
		}
		if _, err := s.LastTodos(ctx, "no-such-session"); err == nil {
			t.Fatal("an unknown session has a todo list")
		}
	})
}
