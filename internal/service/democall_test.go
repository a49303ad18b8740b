package service_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"harness/internal/service"
	"harness/internal/session"
	"harness/internal/testkit"
)

// turnEvents returns the last turn's events of a session.
func (e *env) turnEvents(id string) []session.Event {
	e.t.Helper()
	ag, ok := e.app.Manager.Lookup(id)
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

// offers reports whether the session's latest request/header offers tool.
func (e *env) offers(id, tool string) bool {
	e.t.Helper()
	ag, ok := e.app.Manager.Lookup(id)
	if !ok {
		e.t.Fatal("the session is not loaded")
	}
	headers := testkit.Find[session.RequestHeader](e.t, ag.Log().Events(0, ag.Log().Len()), session.TypeRequestHeader)
	if len(headers) == 0 {
		e.t.Fatal("no request/header")
	}
	for _, sc := range headers[len(headers)-1].Header.Tools {
		if sc.Name == tool {
			return true
		}
	}
	return false
}

// answer is the text of the last turn's final assistant message.
func (e *env) answer(id string) string {
	e.t.Helper()
	msgs := testkit.Find[session.AssistantMessage](e.t, e.turnEvents(id), session.TypeAssistantMessage)
	if len(msgs) == 0 {
		e.t.Fatal("the turn has no assistant message")
	}
	return msgs[len(msgs)-1].Message.Text()
}

// The demo model's call: rule through the real go-openai client and the
// driver: a read tool runs at once and the answer quotes the file; a write
// in ask mode waits for an approval showing the change, runs once allowed
// and the file exists; arguments that are not JSON get an answer and no
// call.
func TestDemoCallRuleThroughTheDriver(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.shared(service.NewSession{Mode: session.ModeAsk})
	if err := os.WriteFile(filepath.Join(s.Workspace.Path, "notes.txt"), []byte("first line\nsecond line\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	e.run(e.alice, s.ID, `call: read {"file_path": "notes.txt"}`)
	calls := testkit.Find[session.ToolCall](t, e.turnEvents(s.ID), session.TypeToolCall)
	if len(calls) != 1 || calls[0].Name != "read" || calls[0].Arguments != `{"file_path":"notes.txt"}` {
		t.Fatalf("calls %+v", calls)
	}
	if got := e.answer(s.ID); !strings.Contains(got, "`notes.txt` has 2 lines") || !strings.Contains(got, "1\tfirst line\n     2\tsecond line") {
		t.Fatalf("answer %q", got)
	}

	if _, err := e.svc.SendMessage(t.Context(), e.alice, s.ID, service.Message{Content: `call: write {"file_path": "out.txt", "content": "written by call"}`}); err != nil {
		t.Fatal(err)
	}
	in := e.pendingApproval(s.ID)
	if in.ToolName != "write" || in.Preview == nil || !strings.Contains(in.Preview.Diff, "+written by call") {
		t.Fatalf("approval %+v preview %+v", in, in.Preview)
	}
	if err := e.svc.Approve(t.Context(), e.alice, s.ID, in.ID, service.DecisionAllow); err != nil {
		t.Fatal(err)
	}
	e.idle(s.ID)
	if b, err := os.ReadFile(filepath.Join(s.Workspace.Path, "out.txt")); err != nil || string(b) != "written by call" {
		t.Fatalf("out.txt = %q, %v", b, err)
	}
	if got := e.answer(s.ID); !strings.Contains(got, "Wrote `out.txt`") {
		t.Fatalf("answer %q", got)
	}

	e.run(e.alice, s.ID, `call: write {"file_path": out.txt}`)
	if calls := testkit.Find[session.ToolCall](t, e.turnEvents(s.ID), session.TypeToolCall); len(calls) != 0 {
		t.Fatalf("a call with invalid JSON was made: %+v", calls)
	}
	if got := e.answer(s.ID); !strings.Contains(got, "not valid JSON") {
		t.Fatalf("answer %q", got)
	}
	ends := testkit.Find[session.TurnEnd](t, e.turnEvents(s.ID), session.TypeTurnEnd)
	if len(ends) != 1 || ends[0].Reason.Kind != session.ReasonCompleted {
		t.Fatalf("turn end %+v", ends)
	}
}

// web_fetch through call: on the demo model. With the network off the
// tool refuses and the answer reports it; once an admin turns the network
// on and allow-lists the loopback site, the fetch asks for approval
// (showing the URL) and the answer carries the page as markdown.
func TestDemoCallsWebFetch(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body><h1>Changelog</h1><p>Fixed <em>everything</em>.</p></body></html>")
	}))
	t.Cleanup(site.Close)
	e := newEnv(t)
	ctx := t.Context()
	s := e.shared(service.NewSession{Mode: session.ModeAsk})
	prompt := `call: web_fetch {"url": "` + site.URL + `/changes"}`

	// The network is off: web_fetch is not offered, so nothing is called
	// and nobody is asked.
	e.run(e.alice, s.ID, prompt)
	if offered := e.offers(s.ID, "web_fetch"); offered {
		t.Fatal("web_fetch offered with the network off")
	}
	if calls := testkit.Find[session.ToolCall](t, e.turnEvents(s.ID), session.TypeToolCall); len(calls) != 0 {
		t.Fatalf("calls %+v", calls)
	}
	if asked := testkit.Find[session.ApprovalAsked](t, e.turnEvents(s.ID), session.TypeApprovalAsked); len(asked) != 0 {
		t.Fatalf("approval asked for a refused call: %+v", asked)
	}
	if got := e.answer(s.ID); !strings.Contains(got, "no tool named `web_fetch`") {
		t.Fatalf("answer %q", got)
	}

	// Only an admin changes the allow-list; bad entries are refused.
	wantCode(t, "a user sets fetch hosts", e.svc.SetFetchHosts(ctx, e.alice, []string{"127.0.0.1"}), service.CodeForbidden)
	wantCode(t, "a bad host", e.svc.SetFetchHosts(ctx, e.root, []string{"not a host"}), service.CodeBadRequest)
	if err := e.svc.SetNetwork(ctx, e.root, s.ID, true); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.SetFetchHosts(ctx, e.root, []string{strings.TrimPrefix(site.URL, "http://")}); err != nil {
		t.Fatal(err)
	}
	st, err := e.svc.SandboxSettings(ctx, e.root)
	if err != nil || len(st.FetchHosts) != 1 || st.FetchHosts[0] != strings.TrimPrefix(site.URL, "http://") {
		t.Fatalf("settings %+v, %v", st.FetchHosts, err)
	}

	if _, err := e.svc.SendMessage(ctx, e.alice, s.ID, service.Message{Content: prompt}); err != nil {
		t.Fatal(err)
	}
	in := e.pendingApproval(s.ID)
	if !e.offers(s.ID, "web_fetch") {
		t.Fatal("web_fetch not offered with the network on")
	}
	if in.ToolName != "web_fetch" || in.Preview == nil || in.Preview.Command != "GET "+site.URL+"/changes" {
		t.Fatalf("approval %+v preview %+v", in, in.Preview)
	}
	if err := e.svc.Approve(ctx, e.alice, s.ID, in.ID, service.DecisionAllow); err != nil {
		t.Fatal(err)
	}
	e.idle(s.ID)
	if got := e.answer(s.ID); !strings.Contains(got, "`web_fetch` tool returned") || !strings.Contains(got, "# Changelog") || !strings.Contains(got, "Fixed *everything*.") {
		t.Fatalf("answer %q", got)
	}
}
