package builtin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"harness/internal/session"
	"harness/internal/tools"
)

func TestAskUser(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	var got []session.Question
	h.env.ask = func(ctx context.Context, call *tools.Call, qs []session.Question) ([]session.Answer, error) {
		got = qs
		return []session.Answer{{ID: "db", Selected: []string{"Postgres"}}, {ID: "name", Custom: "harness"}}, nil
	}
	r := h.run(ToolAskUser, map[string]any{"questions": []map[string]any{
		{"id": "db", "question": "Which database?", "header": "Database", "multi_select": true,
			"options": []map[string]any{{"label": "Postgres", "description": "server"}, {"label": "SQLite"}}},
		{"id": "name", "question": "Project name?"},
	}})
	if text := mustOK(t, r); text != `{"answers":[{"id":"db","selected":["Postgres"]},{"id":"name","selected":[],"custom":"harness"}]}` {
		t.Fatalf("result %s", text)
	}
	want := []session.Question{
		{ID: "db", Question: "Which database?", Header: "Database", MultiSelect: true,
			Options: []session.QuestionOption{{Label: "Postgres", Description: "server"}, {Label: "SQLite"}}},
		{ID: "name", Question: "Project name?"},
	}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Fatalf("questions %s\nwant %s", gj, wj)
	}
	if ask := h.env.rec.trace("ask"); len(ask) != 1 {
		t.Fatalf("ask calls %v", ask)
	}
}

func TestAskUserFailures(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	// Cancelled while waiting: an error result, the question withdrawn.
	ctx, cancel := context.WithCancel(context.Background())
	h.env.ask = func(ctx context.Context, call *tools.Call, qs []session.Question) ([]session.Answer, error) {
		cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	r := h.runCtx(ctx, ToolAskUser, map[string]any{"questions": []map[string]any{{"id": "q", "question": "?"}}})
	if errCode(r) != CodeQuestionCancelled || !strings.Contains(resultText(r), "withdrawn") {
		t.Fatalf("cancelled: %+v", r)
	}
	// Duplicate ids and empty lists are refused before anyone is asked.
	h.env.rec = &recorder{}
	mustCode(t, h.run(ToolAskUser, map[string]any{"questions": []map[string]any{{"id": "q", "question": "a"}, {"id": "q", "question": "b"}}}), tools.CodeInvalidArgs)
	mustCode(t, h.run(ToolAskUser, map[string]any{"questions": []map[string]any{}}), tools.CodeInvalidArgs)
	mustCode(t, h.run(ToolAskUser, map[string]any{"questions": []map[string]any{{"id": "q"}}}), tools.CodeInvalidArgs)
	if len(h.env.rec.trace("ask")) != 0 {
		t.Fatal("invalid questions reached the user")
	}
	// No channel: the Env's error is reported.
	h.env.ask = nil
	if r := h.run(ToolAskUser, map[string]any{"questions": []map[string]any{{"id": "q", "question": "?"}}}); !r.IsError || !strings.Contains(resultText(r), "no question channel") {
		t.Fatalf("no channel: %+v", r)
	}
}

func TestTodoWrite(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	r := h.run(ToolTodoWrite, map[string]any{"todos": []map[string]any{
		{"content": "plan", "status": "completed"},
		{"content": "build", "status": "in_progress"},
		{"content": "test", "status": "pending"},
		{"content": "ship", "status": "pending"},
	}})
	if text := mustOK(t, r); text != "Updated todo list: 2 pending, 1 in progress, 1 completed" {
		t.Fatalf("result %q", text)
	}
	emits := h.env.rec.emits(session.TypeTodoWrite)
	if len(emits) != 1 {
		t.Fatalf("%d todo/write events", len(emits))
	}
	tw := emits[0].Data.(session.TodoWrite)
	if len(tw.Todos) != 4 || tw.Todos[1] != (session.Todo{Content: "build", Status: session.TodoInProgress}) {
		t.Fatalf("event %+v", tw)
	}
	// The event lands between the call and its result.
	assertTrace(t, h.env.rec.trace("call", "emit", "commit"), []string{"call:call_1", "emit:", "commit:call_1"})

	mustCode(t, h.run(ToolTodoWrite, map[string]any{"todos": []map[string]any{{"content": "x", "status": "done"}}}), tools.CodeInvalidArgs)
	if r := h.run(ToolTodoWrite, map[string]any{"todos": []map[string]any{}}); resultText(r) != "Updated todo list: 0 pending, 0 in progress, 0 completed" {
		t.Fatalf("empty list: %+v", r)
	}
}
