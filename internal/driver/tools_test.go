package driver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/session"
	"harness/internal/testkit/poll"
	"harness/internal/tools"
	"harness/internal/tools/builtin"
)

// lastToolMessage returns the tool message of the model's last request.
func lastToolMessage(t *testing.T, h *harness) fake.WireMessage {
	t.Helper()
	reqs := h.fake.Requests()
	msgs := reqs[len(reqs)-1].Messages()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "tool" {
			return msgs[i]
		}
	}
	t.Fatalf("no tool message in the last request")
	return fake.WireMessage{}
}

// Workspace escapes are refused with a clear error result the model reads;
// nothing outside the workspace is touched, and the turn goes on.
func TestWorkspaceEscapesRefused(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("top secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		tool string
		args map[string]any
	}{
		{"dot-dot read", "read", map[string]any{"file_path": "../secret.txt"}},
		{"absolute read", "read", map[string]any{"file_path": secret}},
		{"symlink read", "read", map[string]any{"file_path": "link.txt"}},
		{"dot-dot write", "write", map[string]any{"file_path": "../../evil.txt", "content": "x"}},
		{"symlinked dir write", "write", map[string]any{"file_path": "linkdir/evil.txt", "content": "x"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, script(toolReply(call("c1", tc.tool, tc.args)), textReply("understood")))
			_ = h.agent.SetMode(h.ctx, session.ModeAuto, nil)
			if err := os.Symlink(secret, filepath.Join(h.ws, "link.txt")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(h.ws, "linkdir")); err != nil {
				t.Fatal(err)
			}
			h.followup("try it")
			h.idle()
			res := find[session.ToolResult](h, session.TypeToolResult)[0]
			text := res.Message.Content[0].Content[0].Text
			if !res.Message.Content[0].IsError || res.Error == nil || res.Error.Code != builtin.CodePathOutsideWorkspace || strings.Contains(text, "top secret") {
				t.Fatalf("result %+v %q", res.Error, text)
			}
			if fileExists(outside, "evil.txt") || fileExists(filepath.Dir(h.dir), "evil.txt") {
				t.Fatal("a file was written outside the workspace")
			}
			if tm := lastToolMessage(t, h); !strings.Contains(tm.Text(), "outside") {
				t.Fatalf("the model was not told: %q", tm.Text())
			}
			if h.lastTurnEnd().Kind != session.ReasonCompleted {
				t.Fatal(h.dump())
			}
		})
	}
}

// Invalid tool arguments and unknown tools become error results the model
// sees (cases 47, 49); the turn continues.
func TestInvalidToolCalls(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		call     fake.ToolCall
		wantCode string
	}{
		{"not json", fake.ToolCall{ID: "c1", Name: "read", Arguments: "not json"}, tools.CodeInvalidArgs},
		{"wrong type", call("c1", "read", map[string]any{"file_path": 42}), tools.CodeInvalidArgs},
		{"missing field", call("c1", "bash", map[string]any{"description": "nothing"}), tools.CodeInvalidArgs},
		{"unknown tool", call("c1", "teleport", map[string]any{}), tools.CodeUnknownTool},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, script(toolReply(tc.call), textReply("I will fix my call")))
			h.followup("go")
			h.idle()
			res := find[session.ToolResult](h, session.TypeToolResult)[0]
			if res.Error == nil || res.Error.Code != tc.wantCode || !res.Message.Content[0].IsError {
				t.Fatalf("result %+v", res)
			}
			if tm := lastToolMessage(t, h); !strings.HasPrefix(tm.Text(), "Error") {
				t.Fatalf("model saw %q", tm.Text())
			}
			if h.lastTurnEnd().Kind != session.ReasonCompleted || len(h.fake.Requests()) != 2 {
				t.Fatal(h.dump())
			}
		})
	}
}

// Case 46: a pre-execute deny (read-only mode refusing bash) runs no body
// and tells the model why.
func TestCase46PreExecuteDeny(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(toolReply(call("c1", "bash", map[string]any{"command": "touch ran", "description": "t"})), textReply("ok")))
	_ = h.agent.SetMode(h.ctx, session.ModeReadOnly, nil)
	h.followup("go")
	h.idle()
	if fileExists(h.ws, "ran") {
		t.Fatal("denied body ran")
	}
	if tm := lastToolMessage(t, h); !strings.HasPrefix(tm.Text(), "Error: the session is in read-only mode") {
		t.Fatalf("model saw %q", tm.Text())
	}
}

// Permission modes and approvals (case 51 and DESIGN §5): in ask mode a
// write waits for a person; allow runs it, deny refuses it; read-only
// refuses without asking; auto never asks.
func TestApprovals(t *testing.T) {
	t.Parallel()
	writeCall := call("c1", "write", map[string]any{"file_path": "out.txt", "content": "hello"})
	cases := []struct {
		name      string
		mode      session.PermissionMode
		answer    *bool
		wantFile  bool
		wantAsked bool
		wantText  string
	}{
		{"ask, allowed", session.ModeAsk, ptr(true), true, true, ""},
		{"ask, denied", session.ModeAsk, ptr(false), false, true, "rejected"},
		{"read-only", session.ModeReadOnly, nil, false, false, "read-only"},
		{"auto", session.ModeAuto, nil, true, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, script(toolReply(writeCall), textReply("ok")))
			if err := h.agent.SetMode(h.ctx, tc.mode, &session.Actor{UserID: "u1"}); err != nil {
				t.Fatal(err)
			}
			h.followup("write it")
			if tc.answer != nil {
				ev := h.waitEvent(isType(session.TypeApprovalAsked))
				asked, _ := session.Decode[session.ApprovalAsked](ev)
				pending := h.agent.PendingInteractions()
				if len(pending) != 1 || pending[0].ID != asked.ID || pending[0].Arguments == "" || pending[0].ToolName != "write" {
					t.Fatalf("pending %+v", pending)
				}
				if err := h.agent.Approve(h.ctx, asked.ID, *tc.answer, &session.Actor{UserID: "u2", Name: "Bo"}); err != nil {
					t.Fatal(err)
				}
				if err := h.agent.Approve(h.ctx, asked.ID, true, nil); err == nil {
					t.Fatal("a second answer was accepted")
				}
			}
			h.idle()
			if got := fileExists(h.ws, "out.txt"); got != tc.wantFile {
				t.Fatalf("file written = %v, want %v\n%s", got, tc.wantFile, h.dump())
			}
			asked := find[session.ApprovalAsked](h, session.TypeApprovalAsked)
			if (len(asked) == 1) != tc.wantAsked {
				t.Fatalf("asked %+v", asked)
			}
			if tc.wantAsked {
				d := find[session.ApprovalDecided](h, session.TypeApprovalDecided)
				if len(d) != 1 || d[0].By == nil || d[0].By.UserID != "u2" {
					t.Fatalf("decided %+v", d)
				}
				if r := h.live.kinds(driver.LiveInteractionResolved); len(r) != 1 {
					t.Fatalf("%d resolved notifications", len(r))
				}
			}
			if tc.wantText != "" && !strings.Contains(strings.ToLower(lastToolMessage(t, h).Text()), tc.wantText) {
				t.Fatalf("model saw %q, want it to mention %q", lastToolMessage(t, h).Text(), tc.wantText)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// A pending approval is withdrawn (cancelled) when its turn is cancelled.
func TestApprovalWithdrawnOnCancel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(toolReply(call("c1", "bash", map[string]any{"command": "touch ran", "description": "t"}))))
	h.followup("go")
	ev := h.waitEvent(isType(session.TypeApprovalAsked))
	asked, _ := session.Decode[session.ApprovalAsked](ev)
	h.agent.Cancel(userCancel, false)
	h.idle()
	d := find[session.ApprovalDecided](h, session.TypeApprovalDecided)
	if len(d) != 1 || d[0].ID != asked.ID || d[0].Outcome != session.ApprovalCancelled {
		t.Fatalf("decided %+v", d)
	}
	if err := h.agent.Approve(h.ctx, asked.ID, true, nil); err == nil {
		t.Fatal("a withdrawn approval accepted an answer")
	}
	if fileExists(h.ws, "ran") || len(h.agent.PendingInteractions()) != 0 {
		t.Fatal("withdrawn approval left traces")
	}
}

// ask_user: the question is a durable pending record; the answer reaches
// the model; bad answers are refused.
func TestAskUser(t *testing.T) {
	t.Parallel()
	q := call("c1", "ask_user", map[string]any{"questions": []map[string]any{
		{"id": "q1", "question": "Deploy now?", "options": []map[string]any{{"label": "yes"}, {"label": "no"}}},
	}})
	h := newHarness(t, script(toolReply(q), textReply("deploying")))
	h.followup("deploy?")
	ev := h.waitEvent(isType(session.TypeQuestionAsked))
	asked, _ := session.Decode[session.QuestionAsked](ev)
	if err := h.agent.Answer(h.ctx, asked.ID, []session.Answer{{ID: "q1", Selected: []string{"maybe"}}}, nil); err == nil {
		t.Fatal("an unknown option was accepted")
	}
	if err := h.agent.Answer(h.ctx, asked.ID, nil, nil); err == nil {
		t.Fatal("an empty answer was accepted")
	}
	if err := h.agent.Answer(h.ctx, asked.ID, []session.Answer{{ID: "q1", Selected: []string{"yes"}}}, &session.Actor{UserID: "u1"}); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if tm := lastToolMessage(t, h); !strings.Contains(tm.Text(), `"selected":["yes"]`) {
		t.Fatalf("model saw %q", tm.Text())
	}
	ans := find[session.QuestionAnswered](h, session.TypeQuestionAnswered)
	if len(ans) != 1 || ans[0].Outcome != session.QuestionAnsweredOutcome {
		t.Fatalf("answered %+v", ans)
	}
}

// Cancelling during `sleep 30` ends the turn quickly and kills the command's
// whole process group: a background child that would leave a mark after
// 0.8 s never does. (Process ids are not checked: the sandbox's PID
// namespace keeps them from the host.)
func TestCancelKillsShellProcessGroup(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(toolReply(call("c1", "bash", map[string]any{
		"command": "echo started > started; (sleep 0.8; touch survived) & sleep 30; wait", "description": "sleep"}))))
	_ = h.agent.SetMode(h.ctx, session.ModeAuto, nil)
	h.followup("sleep")
	h.waitEvent(isType(session.TypeToolCall))
	poll.Eventually(t, "the command to start", func() bool {
		_, err := os.Stat(filepath.Join(h.ws, "started"))
		return err == nil
	}, poll.Within(10*time.Second))
	start := time.Now()
	h.agent.Cancel(userCancel, false)
	h.idle()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("cancel took %v; the issue asks for under 5 s", took)
	}
	// Proves a negative: a survivor would have left its mark after 0.8 s.
	time.Sleep(1200 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(h.ws, "survived")); err == nil {
		t.Fatal("a process of the cancelled command outlived it")
	}
	res := find[session.ToolResult](h, session.TypeToolResult)
	if len(res) != 1 || !res[0].Message.Content[0].IsError || h.lastTurnEnd().Kind != session.ReasonAborted {
		t.Fatalf("results %+v\n%s", res, h.dump())
	}
}

// Live bash output is logged as tool/output events between the call and its
// result, and todo_write logs the list.
func TestToolOwnedEvents(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(
		toolReply(call("c1", "bash", map[string]any{"command": "echo one; sleep 0.3; echo two", "description": "echo"})),
		toolReply(call("c2", "todo_write", map[string]any{"todos": []map[string]any{{"content": "a", "status": "pending"}, {"content": "b", "status": "completed"}}})),
		textReply("done"),
	))
	_ = h.agent.SetMode(h.ctx, session.ModeAuto, nil)
	h.followup("go")
	h.idle()
	var sawCall, sawOutput, sawResult bool
	var out strings.Builder
	for _, ev := range h.events() {
		switch ev.Type {
		case session.TypeToolCall:
			sawCall = true
		case session.TypeToolOutput:
			if !sawCall || sawResult {
				t.Fatal("tool/output outside its call")
			}
			sawOutput = true
			o, _ := session.Decode[session.ToolOutput](ev)
			out.WriteString(o.Text)
		case session.TypeToolResult:
			sawResult = true
		}
	}
	if !sawOutput || out.String() != "one\ntwo\n" {
		t.Fatalf("live output %q", out.String())
	}
	todos := find[session.TodoWrite](h, session.TypeTodoWrite)
	if len(todos) != 1 || len(todos[0].Todos) != 2 || h.agent.Log().State().Todos[1].Status != session.TodoCompleted {
		t.Fatalf("todos %+v", todos)
	}
}

// Additional contexts from a tool enter the next step after all results
// (case 45).
func TestCase45ToolContextsEnterNextStep(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(toolReply(call("c1", "ctx", map[string]any{}), call("c2", "ctx", map[string]any{})), textReply("ok")))
	err := h.agent.Tools().Register(tools.Definition{
		Name: "ctx", Description: "adds context", Parameters: json.RawMessage(`{"type":"object"}`), Access: tools.AccessRead,
		Execute: func(ctx context.Context, c *tools.Call) (tools.Result, error) {
			r := tools.TextResult("ok")
			r.AdditionalContexts = []llm.Message{llm.UserText("note from "+c.ID, llm.Source{Kind: llm.SourcePlugin, Plugin: "test"})}
			return r, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.followup("go")
	h.idle()
	msgs := h.agent.Log().DeriveMessages()
	roles := derivedRoles(msgs)
	want := []string{"user:text", "user:runtime-context", "assistant:calls", "user:result", "user:result", "user:test", "user:test", "assistant:text"}
	equal(t, "derived", roles, want)
	if msgs[5].Text() != "note from c1" || msgs[6].Text() != "note from c2" {
		t.Fatalf("contexts out of order: %q %q", msgs[5].Text(), msgs[6].Text())
	}
}

// recordingObserver counts what the Observer is told.
type recordingObserver struct {
	mu       sync.Mutex
	turns    []session.ReasonKind
	requests []llm.Code
	tools    []string
}

func (o *recordingObserver) TurnEnded(r session.ReasonKind) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.turns = append(o.turns, r)
}

func (o *recordingObserver) RequestDone(_ string, code llm.Code, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests = append(o.requests, code)
}

func (o *recordingObserver) ToolDone(name, outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.tools = append(o.tools, name+":"+outcome)
}

// The Observer sees every turn, request attempt and tool result.
func TestObserver(t *testing.T) {
	t.Parallel()
	obs := &recordingObserver{}
	h := newHarness(t, script(
		fake.Reply{Error: &fake.HTTPError{Status: 500, Message: "boom"}},
		toolReply(call("c1", "read", map[string]any{"file_path": "missing.txt"}), call("c2", "teleport", map[string]any{})),
		textReply("done"),
	), withManager(func(o *driver.Options) { o.Observer = obs }))
	h.followup("go")
	h.idle()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.turns) != 1 || obs.turns[0] != session.ReasonCompleted {
		t.Fatalf("turns %v", obs.turns)
	}
	if len(obs.requests) != 3 || obs.requests[0] != llm.CodeServer || obs.requests[1] != "" || obs.requests[2] != "" {
		t.Fatalf("requests %v", obs.requests)
	}
	equal(t, "tools", obs.tools, []string{"read:error", "teleport:error"})
}
