package models

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"harness/internal/llm"
	"harness/internal/session"
)

// liveLog builds a session's log through the session API with the writer
// as its Sink, as the driver does, and flushes it.
func liveLog(t *testing.T, s *Store, id string, build func(t *testing.T, l *session.Log)) {
	t.Helper()
	l := session.New(session.Header{ID: id}, session.Options{
		Clock: func() int64 { return 1_700_000_000_000 },
		Sink:  func(ev session.Event) { s.W.Enqueue(id, ev) },
	})
	build(t, l)
	if err := s.W.Flush(ctxTimeout(t, 10*time.Second), id); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

func must(t *testing.T, _ session.Event, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func openTurn(t *testing.T, l *session.Log) {
	t.Helper()
	ev, err := l.Append(session.TypeTurnStart, session.TurnStart{Turn: 1})
	must(t, ev, err)
	ev, err = l.Append(session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 1})
	must(t, ev, err)
	ev, err = l.AppendSurface(session.TypeUserMessage,
		llm.UserText("run the tools", llm.Source{Kind: llm.SourceUser, UserID: "u1", Name: "Ann"}), session.Append(), nil)
	must(t, ev, err)
}

func chunk(t *testing.T, l *session.Log, text string) int64 {
	t.Helper()
	ev, err := l.Append(session.TypeAssistantChunk, session.AssistantChunk{Turn: 1, Step: 1,
		Chunk: llm.Chunk{Type: llm.ChunkTextDelta, Text: text}})
	must(t, ev, err)
	return ev.Seq
}

func assistant(t *testing.T, l *session.Log, sources []int64, blocks ...llm.ContentBlock) {
	t.Helper()
	ev, err := l.AppendSurface(session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 1,
		Message: llm.Message{ID: "a1", Role: llm.RoleAssistant, Content: blocks,
			Source: llm.Source{Kind: llm.SourceModel, Provider: "fake", Model: "m"}},
		Usage: &llm.Usage{InputTokens: 100, OutputTokens: 7}}, session.Append(), sources)
	must(t, ev, err)
}

func TestLoadLogRepairsOnce(t *testing.T) {
	t.Parallel()
	type closer struct {
		typ  session.Type
		code string // tool/result error code
	}
	for _, tc := range []struct {
		name  string
		build func(t *testing.T, l *session.Log)
		want  []closer
	}{
		{
			name: "ends mid-stream",
			build: func(t *testing.T, l *session.Log) {
				openTurn(t, l)
				chunk(t, l, "half an ans")
				chunk(t, l, "wer")
			},
			want: []closer{{typ: session.TypeStepEnd}, {typ: session.TypeTurnEnd}},
		},
		{
			name: "ends mid-tool",
			build: func(t *testing.T, l *session.Log) {
				openTurn(t, l)
				c := chunk(t, l, "calling")
				assistant(t, l, []int64{c},
					llm.ToolCall("c1", "bash", `{"cmd":"ls"}`), llm.ToolCall("c2", "bash", `{"cmd":"pwd"}`))
				ev, err := l.Append(session.TypeToolCall, session.ToolCall{Turn: 1, Step: 1, CallID: "c1", Name: "bash", Arguments: `{"cmd":"ls"}`})
				must(t, ev, err)
			},
			want: []closer{
				{typ: session.TypeToolResult, code: session.CodeToolOutcomeUnknown},
				{typ: session.TypeToolResult, code: session.CodeToolNotStarted},
				{typ: session.TypeStepEnd}, {typ: session.TypeTurnEnd},
			},
		},
		{
			name: "balanced",
			build: func(t *testing.T, l *session.Log) {
				openTurn(t, l)
				assistant(t, l, []int64{}, llm.Text("done"))
				ev, err := l.Append(session.TypeStepEnd, session.StepBoundary{Turn: 1, Step: 1})
				must(t, ev, err)
				ev, err = l.Append(session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.TurnEndReason{Kind: session.ReasonCompleted}})
				must(t, ev, err)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachDB(t, func(t *testing.T, db *DB) {
				s := newTestStore(t, db, WriterOptions{})
				ctx := ctxTimeout(t, 20*time.Second)
				created := time.Date(2025, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
				sess := mustCreate(t, s, &Session{OwnerID: "o", Workspace: "/work/space", ParentID: "parent", SeedLength: 0, CreatedAt: created})
				liveLog(t, s, sess.ID, tc.build)
				before, _ := s.Head(ctx, sess.ID)

				log, closers, err := s.LoadLog(ctx, sess.ID, nil)
				if err != nil {
					t.Fatalf("load: %v", err)
				}
				h := log.Header()
				if h.ID != sess.ID || h.Cwd != "/work/space" || h.ParentSession != "parent" || h.CreatedAt != created.UnixMilli() {
					t.Errorf("header = %+v", h)
				}
				if len(closers) != len(tc.want) {
					t.Fatalf("closers = %d events, want %d: %+v", len(closers), len(tc.want), closers)
				}
				for i, c := range closers {
					if c.Seq != before+1+int64(i) || c.Type != tc.want[i].typ {
						t.Errorf("closer %d = %s #%d, want %s #%d", i, c.Type, c.Seq, tc.want[i].typ, before+1+int64(i))
					}
					if tc.want[i].code != "" {
						tr, err := session.Decode[session.ToolResult](c)
						if err != nil || tr.Error == nil || tr.Error.Code != tc.want[i].code {
							t.Errorf("closer %d error = %+v (%v), want code %s", i, tr.Error, err, tc.want[i].code)
						}
					}
				}
				if n := len(closers); n > 0 {
					end, err := session.Decode[session.TurnEnd](closers[n-1])
					if err != nil || end.Reason.Kind != session.ReasonInterrupted {
						t.Errorf("last closer = %+v, want turn/end interrupted", end)
					}
				}
				// The closers are stored, byte for byte.
				raw, err := s.EventsRaw(ctx, sess.ID, before, 0)
				if err != nil || len(raw) != len(closers) {
					t.Fatalf("stored closers = %d (%v), want %d", len(raw), err, len(closers))
				}
				for i, r := range raw {
					if !bytes.Equal(r.Body, mustMarshal(t, closers[i])) {
						t.Errorf("stored closer %d = %s, want %s", i, r.Body, mustMarshal(t, closers[i]))
					}
				}
				head, _ := s.Head(ctx, sess.ID)
				if head != before+int64(len(closers)) || log.Len() != head+1 {
					t.Errorf("head %d, log length %d, want %d", head, log.Len(), before+int64(len(closers))+1)
				}

				// Loading again appends nothing.
				log2, again, err := s.LoadLog(ctx, sess.ID, nil)
				if err != nil || len(again) != 0 {
					t.Fatalf("second load appended %d closers (%v)", len(again), err)
				}
				if h2, _ := s.Head(ctx, sess.ID); h2 != head || log2.Len() != head+1 {
					t.Errorf("second load: head %d, length %d, want %d", h2, log2.Len(), head)
				}
				// The reloaded log keeps appending through the writer.
				if _, err := log2.Append(session.TypeTodoWrite, session.TodoWrite{Todos: []session.Todo{}}); err != nil {
					t.Fatal(err)
				}
				if err := s.W.Flush(ctx, sess.ID); err != nil {
					t.Fatalf("append after load: %v", err)
				}
			})
		})
	}
}

func TestLoadLogAfterDivergedLog(t *testing.T) {
	t.Parallel()
	db := openSQLiteTest(t)
	s := newTestStore(t, db, WriterOptions{})
	ctx := ctxTimeout(t, 10*time.Second)
	id := mustCreate(t, s, &Session{OwnerID: "o", Workspace: "/w"}).ID
	liveLog(t, s, id, openTurn)
	// A stale in-memory log writes a seq the database does not continue.
	s.W.Enqueue(id, variedEvent(id, 42))
	if err := s.W.Flush(ctx, id); !errors.Is(err, ErrSeqMismatch) {
		t.Fatalf("flush = %v, want ErrSeqMismatch", err)
	}
	log, closers, err := s.LoadLog(ctx, id, nil)
	if err != nil {
		t.Fatalf("load after divergence: %v", err)
	}
	if len(closers) != 2 || log.Len() != 5 {
		t.Fatalf("closers %d, length %d; want 2 closers after 3 events", len(closers), log.Len())
	}
	if err := s.W.Flush(ctx, id); err != nil {
		t.Errorf("flush after reload = %v, the refusal should be reset", err)
	}
}

func TestLoadLogMissingSession(t *testing.T) {
	t.Parallel()
	s := newTestStore(t, openSQLiteTest(t), WriterOptions{})
	if _, _, err := s.LoadLog(t.Context(), "nope", nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("load = %v, want ErrNotFound", err)
	}
}
