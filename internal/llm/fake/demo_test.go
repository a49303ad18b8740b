package fake

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"harness/internal/llm"
)

func startDemo(t *testing.T) llm.Provider {
	t.Helper()
	p, stop, err := StartDemo(t.Context(), nil, WithChunkDelay(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return p
}

// turn runs one model call and returns the assembler.
func turn(t *testing.T, p llm.Provider, req llm.Request) *llm.Assembler {
	t.Helper()
	var a llm.Assembler
	if err := llm.Run(context.Background(), p, req, func(c llm.Chunk) error { a.Add(c); return nil }); err != nil {
		t.Fatal(err)
	}
	if f := a.Finish(); f.Kind == llm.FinishError || f.Kind == llm.FinishAborted {
		t.Fatalf("finish = %+v", f)
	}
	return &a
}

func user(text string) llm.Message { return llm.UserText(text, llm.Source{Kind: llm.SourceUser}) }

func modelMsg(a *llm.Assembler) llm.Message {
	return a.Message(llm.NewID(), llm.Source{Kind: llm.SourceModel, Provider: "demo", Model: "demo"})
}

func countDeltas(p llm.Provider, t *testing.T, req llm.Request) (reasoning, text int) {
	t.Helper()
	err := llm.Run(context.Background(), p, req, func(c llm.Chunk) error {
		switch c.Type {
		case llm.ChunkReasoningDelta:
			reasoning++
		case llm.ChunkTextDelta:
			text++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return reasoning, text
}

func TestDemoInfo(t *testing.T) {
	t.Parallel()
	info := startDemo(t).Info()
	if info.Name != "demo" || info.Label != "Offline demo model" || !info.Offline || info.DefaultModel != "demo" {
		t.Fatalf("info = %+v", info)
	}
}

// Each tool rule: the call the model makes, then its answer for a result.
func TestDemoToolRules(t *testing.T) {
	t.Parallel()
	p := startDemo(t)
	tests := []struct {
		name   string
		prompt string
		tool   string
		args   string
		result string
		answer []string // substrings of the final text
	}{
		{"run", "run: echo hi", "bash", `{"command":"echo hi","description":"Run echo hi"}`, "hi\n",
			[]string{"`echo hi`", "```\nhi\n```"}},
		{"read", "read: notes/a.txt", "read", `{"file_path":"notes/a.txt"}`, "one\ntwo\nthree\n",
			[]string{"`notes/a.txt` has 3 lines", "one\ntwo\nthree"}},
		{"write", "write: out.txt\nfirst line\nsecond <line>", "write", `{"file_path":"out.txt","content":"first line\nsecond <line>"}`, "Wrote 29 bytes",
			[]string{"Wrote `out.txt`", "Wrote 29 bytes"}},
		{"ask", "ask: Deploy now?", "ask_user", `{"questions":[{"id":"q1","question":"Deploy now?","options":[{"label":"yes"},{"label":"no"}]}]}`,
			`{"answers":[{"id":"q1","selected":["yes"]}]}`, []string{"You chose **yes**"}},
		{"todo", "todo: plan; build ;test", "todo_write", `{"todos":[{"content":"plan","status":"pending"},{"content":"build","status":"pending"},{"content":"test","status":"pending"}]}`,
			"ok", []string{"Recorded 3 todos", "- [ ] build"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			history := []llm.Message{user(tt.prompt)}
			a := turn(t, p, llm.Request{Messages: history})
			calls := a.ToolCalls()
			if a.Finish().Kind != llm.FinishToolCalls || len(calls) != 1 {
				t.Fatalf("finish %+v calls %+v", a.Finish(), calls)
			}
			if !a.HasVisible() {
				t.Fatal("no reasoning line before the call")
			}
			c := calls[0]
			if c.Name != tt.tool || c.ID == "" {
				t.Fatalf("call = %+v", c)
			}
			var got, want any
			if err := json.Unmarshal([]byte(c.Arguments), &got); err != nil {
				t.Fatalf("arguments %q: %v", c.Arguments, err)
			}
			_ = json.Unmarshal([]byte(tt.args), &want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("arguments = %s, want %s", c.Arguments, tt.args)
			}

			// The answer comes from the conversation alone (works after a
			// restart), with a runtime-context snapshot after the result.
			history = append(history, modelMsg(a),
				llm.ToolResultMessage(llm.NewID(), c.ID, []llm.ContentBlock{llm.Text(tt.result)}, false),
				user("Current runtime context. This snapshot supersedes earlier runtime-context snapshots.\n\nMode: ask"))
			a = turn(t, p, llm.Request{Messages: history})
			if a.Finish().Kind != llm.FinishStop || len(a.ToolCalls()) != 0 {
				t.Fatalf("answer finish %+v", a.Finish())
			}
			text := modelMsg(a).Text()
			for _, s := range tt.answer {
				if !strings.Contains(text, s) {
					t.Fatalf("answer %q lacks %q", text, s)
				}
			}
		})
	}
}

func TestDemoToolError(t *testing.T) {
	t.Parallel()
	p := startDemo(t)
	a := turn(t, p, llm.Request{Messages: []llm.Message{user("run: false")}})
	c := a.ToolCalls()[0]
	history := []llm.Message{user("run: false"), modelMsg(a),
		llm.ToolResultMessage("r", c.ID, []llm.ContentBlock{llm.Text("Error: exit status 1")}, true)}
	text := modelMsg(turn(t, p, llm.Request{Messages: history})).Text()
	if !strings.Contains(text, "reported an error") || !strings.Contains(text, "exit status 1") {
		t.Fatalf("answer = %q", text)
	}
}

func TestDemoStreamingRules(t *testing.T) {
	t.Parallel()
	p := startDemo(t)
	tests := []struct {
		prompt          string
		reasoning, text int // -1: at least one
	}{
		{"long: 250", 0, 250},
		{"think: 40", 40, 5},
		{"long: nope", -1, -1},
	}
	for _, tt := range tests {
		r, x := countDeltas(p, t, llm.Request{Messages: []llm.Message{user(tt.prompt)}})
		if (tt.reasoning >= 0 && r != tt.reasoning) || (tt.reasoning < 0 && r == 0) ||
			(tt.text >= 0 && x != tt.text) || (tt.text < 0 && x == 0) {
			t.Errorf("%q: %d reasoning, %d text deltas", tt.prompt, r, x)
		}
	}
}

func TestDemoDefaultReply(t *testing.T) {
	t.Parallel()
	p := startDemo(t)
	req := llm.Request{Messages: []llm.Message{user("What is *this*?\nSecond line")}}
	a := turn(t, p, req)
	msg := modelMsg(a)
	if len(msg.Content) != 2 || msg.Content[0].Type != llm.BlockReasoning {
		t.Fatalf("content = %+v", msg.Content)
	}
	if text := msg.Text(); !strings.Contains(text, "> What is *this*?\n> Second line") || !strings.Contains(text, "offline demo model") {
		t.Fatalf("text = %q", text)
	}
	// Deterministic, including usage.
	b := turn(t, p, req)
	if !reflect.DeepEqual(modelMsg(b).Content, msg.Content) || *b.Usage() != *a.Usage() {
		t.Fatal("demo reply not deterministic")
	}
	if u := a.Usage(); u == nil || u.InputTokens <= 0 || u.OutputTokens <= 0 || u.ReasoningTokens <= 0 {
		t.Fatalf("usage = %+v", a.Usage())
	}

	// Thinking off: no reasoning.
	req.ReasoningEffort = llm.EffortOff
	if got := modelMsg(turn(t, p, req)); len(got.Content) != 1 || got.Content[0].Type != llm.BlockText {
		t.Fatalf("effort off content = %+v", got.Content)
	}
}

func TestDemoCacheHitsGrow(t *testing.T) {
	t.Parallel()
	p := startDemo(t)
	history := []llm.Message{user("hello")}
	first := turn(t, p, llm.Request{Messages: history})
	history = append(history, modelMsg(first), user("again"))
	second := turn(t, p, llm.Request{Messages: history})
	if first.Usage().CacheReadTokens != 0 || second.Usage().CacheReadTokens <= 0 {
		t.Fatalf("cache reads %d then %d", first.Usage().CacheReadTokens, second.Usage().CacheReadTokens)
	}
}

func TestDemoPurposes(t *testing.T) {
	t.Parallel()
	p := startDemo(t)
	history := []llm.Message{user("Refactor the parser module please and add tests")}
	title := modelMsg(turn(t, p, llm.Request{Purpose: llm.PurposeTitle, Messages: history}))
	if title.Text() != "Refactor the parser module please and" || len(title.Content) != 1 {
		t.Fatalf("title = %+v", title.Content)
	}
	instruction := user("Stop working on the task for a moment: your job now is to write a checkpoint of the conversation above, so that the work can continue from it alone.")
	sum := modelMsg(turn(t, p, llm.Request{Purpose: llm.PurposeCompaction, Messages: append(history, instruction)})).Text()
	if !strings.Contains(sum, "Summary") || !strings.Contains(sum, "> Refactor the parser") || strings.Contains(sum, "checkpoint") {
		t.Fatalf("summary = %q", sum)
	}
}

// call: calls any offered tool with the user's JSON arguments, then
// summarises the result; a bad request is answered, never called.
func TestDemoCallRule(t *testing.T) {
	t.Parallel()
	p := startDemo(t)
	offered := []llm.ToolSchema{
		{Name: "read", Parameters: json.RawMessage(`{"type":"object"}`)},
		{Name: "web_fetch", Parameters: json.RawMessage(`{"type":"object"}`)},
	}
	calls := []struct {
		name, prompt, tool, args string
		result                   string
		answer                   []string
	}{
		{"read", "call: read {\"file_path\": \"notes.txt\"}", "read", `{"file_path":"notes.txt"}`, "alpha\nbeta\n",
			[]string{"`notes.txt` has 2 lines", "alpha\nbeta"}},
		{"multi-line JSON, any tool", "CALL: web_fetch {\n  \"url\": \"https://example.com\"\n}", "web_fetch", `{"url":"https://example.com"}`,
			"URL: https://example.com\n\n# Example Domain\n", []string{"`web_fetch` tool returned 3 lines", "# Example Domain"}},
		{"no arguments", "call: web_fetch", "web_fetch", `{}`, strings.Repeat("line\n", 30),
			[]string{"returned 30 lines", "The first 20", "…and 10 more lines."}},
	}
	for _, tt := range calls {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			history := []llm.Message{user(tt.prompt)}
			a := turn(t, p, llm.Request{Messages: history, Tools: offered})
			c := a.ToolCalls()
			if a.Finish().Kind != llm.FinishToolCalls || len(c) != 1 || c[0].Name != tt.tool || c[0].Arguments != tt.args {
				t.Fatalf("finish %+v calls %+v", a.Finish(), c)
			}
			history = append(history, modelMsg(a), llm.ToolResultMessage(llm.NewID(), c[0].ID, []llm.ContentBlock{llm.Text(tt.result)}, false))
			text := modelMsg(turn(t, p, llm.Request{Messages: history, Tools: offered})).Text()
			for _, s := range tt.answer {
				if !strings.Contains(text, s) {
					t.Errorf("answer %q lacks %q", text, s)
				}
			}
		})
	}

	answers := []struct {
		name, prompt string
		answer       []string
	}{
		{"invalid JSON", `call: read {"file_path": notes.txt}`, []string{"not valid JSON", "invalid character", "did not call"}},
		{"unterminated JSON", `call: read {"file_path": "a"`, []string{"not valid JSON", "unexpected end of JSON input"}},
		{"unknown tool", `call: rm_rf {}`, []string{"no tool named `rm_rf`", "`read`, `web_fetch`"}},
		{"no tool", `call:`, []string{"Which tool should I call?"}},
	}
	for _, tt := range answers {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := turn(t, p, llm.Request{Messages: []llm.Message{user(tt.prompt)}, Tools: offered})
			if a.Finish().Kind != llm.FinishStop || len(a.ToolCalls()) != 0 {
				t.Fatalf("finish %+v calls %+v", a.Finish(), a.ToolCalls())
			}
			text := modelMsg(a).Text()
			for _, s := range tt.answer {
				if !strings.Contains(text, s) {
					t.Errorf("answer %q lacks %q", text, s)
				}
			}
		})
	}
}
