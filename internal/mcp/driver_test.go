package mcp_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"harness/internal/auth"
	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/mcp"
	"harness/internal/service"
	"harness/internal/session"
	"harness/internal/testkit"
	"harness/internal/testkit/poll"
	"harness/internal/tools"
)

// sessionTools adapts the manager to the driver, as app.MCPTools does.
type sessionTools struct{ m *mcp.Manager }

func (s sessionTools) Open(id, workspace string, confine func(context.Context, tools.Process) (*exec.Cmd, error)) driver.SessionToolSet {
	return s.m.Open(id, workspace, confine)
}

// env is the server's parts (real store, sandbox, workspaces, driver,
// service) with the demo model and m as the sessions' MCP tools.
type env struct {
	t     *testing.T
	st    *testkit.Stack
	m     *mcp.Manager
	alice *auth.Actor
}

func newEnv(t *testing.T, cfg mcp.Config, dial mcp.Dialer) *env {
	t.Helper()
	m := mcp.New(cfg, mcp.Options{Log: testkit.Logger(), Dial: dial})
	st := testkit.NewStack(t, testkit.StackOptions{
		Demo: true, DemoOptions: []fake.Option{fake.WithChunkDelay(time.Millisecond)},
		VerifyRequests: true,
		Manager:        func(o *driver.Options) { o.SessionTools = sessionTools{m} },
	})
	t.Cleanup(m.Close)
	return &env{t: t, st: st, m: m, alice: st.Actor("alice", false)}
}

func (e *env) session(mode session.PermissionMode) service.Session {
	e.t.Helper()
	s, err := e.st.Service.CreateSession(e.t.Context(), e.alice, service.NewSession{Mode: mode, Provider: "demo"})
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) send(id, text string) {
	e.t.Helper()
	if _, err := e.st.Service.SendMessage(e.t.Context(), e.alice, id, service.Message{Content: text}); err != nil {
		e.t.Fatal(err)
	}
}

// approve waits for the approval of tool and allows it once.
func (e *env) approve(id, tool string) {
	e.t.Helper()
	ag, ok := e.st.Manager.Lookup(id)
	if !ok {
		e.t.Fatal("the session is not loaded")
	}
	var asked driver.Interaction
	poll.Eventually(e.t, "an approval of "+tool, func() bool {
		for _, in := range ag.PendingInteractions() {
			if in.Kind == driver.KindApproval {
				asked = in
				return true
			}
		}
		return false
	}, poll.Within(30*time.Second))
	if asked.ToolName != tool {
		e.t.Fatalf("approval of %q, want %q", asked.ToolName, tool)
	}
	if err := e.st.Service.Approve(e.t.Context(), e.alice, id, asked.ID, service.DecisionAllow); err != nil {
		e.t.Fatal(err)
	}
}

// turn returns the last turn's events.
func (e *env) turn(id string) []session.Event {
	e.t.Helper()
	ag, ok := e.st.Manager.Lookup(id)
	if !ok {
		e.t.Fatal("the session is not loaded")
	}
	evs := ag.Log().Events(0, ag.Log().Len())
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == session.TypeTurnStart {
			return evs[i:]
		}
	}
	return nil
}

// result is the last turn's only tool result.
func (e *env) result(id string) session.ToolResult {
	e.t.Helper()
	rs := testkit.Find[session.ToolResult](e.t, e.turn(id), session.TypeToolResult)
	if len(rs) != 1 {
		e.t.Fatalf("%d tool results, want 1", len(rs))
	}
	return rs[0]
}

func resultText(r session.ToolResult) string {
	var parts []string
	for _, b := range r.Message.Content {
		parts = append(parts, llm.Message{Content: b.Content}.Text())
	}
	return strings.Join(parts, "\n")
}

func (e *env) answer(id string) string {
	e.t.Helper()
	msgs := testkit.Find[session.AssistantMessage](e.t, e.turn(id), session.TypeAssistantMessage)
	if len(msgs) == 0 {
		e.t.Fatal("no assistant message")
	}
	return msgs[len(msgs)-1].Message.Text()
}

// The demo model's call: rule calls an MCP tool through the driver: the
// tool is in the logged request header, an exec tool waits for approval in
// ask mode, the result reaches the model, arguments the server's schema
// refuses fail before anyone is asked, and the connection closes when the
// session is removed.
func TestDemoCallsAnMCPToolThroughTheDriver(t *testing.T) {
	t.Parallel()
	p := newServer(t)
	e := newEnv(t, mcp.Config{Servers: []mcp.Server{{Name: "srv", CallTimeout: time.Minute, StartTimeout: 10 * time.Second}}}, p.dial)
	s := e.session(session.ModeAsk)

	e.send(s.ID, `call: srv__echo {"text": "over the driver"}`)
	e.approve(s.ID, "srv__echo")
	e.st.WaitIdle(t, s.ID)
	if r := e.result(s.ID); r.Message.Content[0].IsError || resultText(r) != "echo: over the driver" {
		t.Fatalf("result %+v", r)
	}
	if got := e.answer(s.ID); !strings.Contains(got, "echo: over the driver") {
		t.Fatalf("answer %q", got)
	}
	headers := testkit.Find[session.RequestHeader](t, e.turn(s.ID), session.TypeRequestHeader)
	if len(headers) == 0 {
		t.Fatal("no request header logged")
	}
	var offered bool
	for _, tool := range headers[0].Header.Tools {
		offered = offered || tool.Name == "srv__echo"
	}
	if !offered {
		t.Fatalf("srv__echo not in the logged header: %+v", headers[0].Header.Tools)
	}

	e.send(s.ID, `call: srv__echo {"text": 5}`)
	e.st.WaitIdle(t, s.ID)
	r := e.result(s.ID)
	if r.Error == nil || r.Error.Code != tools.CodeInvalidArgs {
		t.Fatalf("bad arguments: %+v", r)
	}
	if asked := testkit.Find[session.ApprovalAsked](t, e.turn(s.ID), session.TypeApprovalAsked); len(asked) != 0 {
		t.Fatalf("approval asked for invalid arguments: %+v", asked)
	}
	// The second turn reused the header: the tool list did not change.
	if hs := testkit.Find[session.RequestHeader](t, e.turn(s.ID), session.TypeRequestHeader); len(hs) != 0 {
		t.Fatalf("the second turn logged a new header: %+v", hs)
	}
	if p.dialCount() != 1 {
		t.Fatalf("dials = %d, want 1", p.dialCount())
	}
}
