package service_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"harness/internal/auth"
	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/models"
	"harness/internal/render"
	"harness/internal/service"
	"harness/internal/session"
	"harness/internal/testkit"
	"harness/internal/testkit/poll"
)

// taskCall is the demo model's call rule for the task tool.
func taskCall(desc, prompt string, toolNames ...string) string {
	args := map[string]any{"description": desc, "prompt": prompt}
	if toolNames != nil {
		args["tools"] = toolNames
	}
	b, _ := json.Marshal(args)
	return "call: task " + string(b)
}

// started returns the subagent/started events of the parent's last turn.
func (e *env) started(id string) []session.SubagentStarted {
	e.t.Helper()
	return testkit.Find[session.SubagentStarted](e.t, e.turnEvents(id), session.TypeSubagentStarted)
}

// taskResult is the last tool/result of the parent's last turn.
func (e *env) taskResult(id string) (session.ToolResult, session.SubagentMeta) {
	e.t.Helper()
	rs := testkit.Find[session.ToolResult](e.t, e.turnEvents(id), session.TypeToolResult)
	if len(rs) == 0 {
		e.t.Fatal("no tool/result")
	}
	r := rs[len(rs)-1]
	var m struct {
		Subagent session.SubagentMeta `json:"subagent"`
	}
	if len(r.Meta) > 0 {
		if err := json.Unmarshal(r.Meta, &m); err != nil {
			e.t.Fatal(err)
		}
	}
	return r, m.Subagent
}

// childLog is the whole log of a loaded child session.
func (e *env) childLog(id string) []session.Event {
	e.t.Helper()
	ag, err := e.app.Manager.Get(e.t.Context(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return ag.Log().Events(0, ag.Log().Len())
}

func lastHeaderTools(t *testing.T, evs []session.Event) []string {
	t.Helper()
	hs := testkit.Find[session.RequestHeader](t, evs, session.TypeRequestHeader)
	if len(hs) == 0 {
		t.Fatal("no request/header")
	}
	var names []string
	for _, s := range hs[len(hs)-1].Header.Tools {
		names = append(names, s.Name)
	}
	return names
}

// The happy path through the real driver, demo model and SQLite store: a
// task call runs a child session (linked to the parent, same owner and
// workspace, read-only in ask mode, only read tools, the prompt as its
// first message from the parent agent), the child's answer is the call's
// result, its usage is in the result's meta, and the child is not listed.
func TestTaskRunsASubagent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.shared(service.NewSession{Mode: session.ModeAsk})
	if err := os.WriteFile(filepath.Join(s.Workspace.Path, "notes.txt"), []byte("first line\nsecond line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.run(e.alice, s.ID, taskCall("Read the notes", "read: notes.txt"))

	st := e.started(s.ID)
	if len(st) != 1 || st[0].Description != "Read the notes" || st[0].Mode != session.ModeReadOnly {
		t.Fatalf("subagent/started %+v", st)
	}
	childID := st[0].Session
	if want := []string{"glob", "grep", "read"}; !slices.Equal(st[0].Tools, want) {
		t.Errorf("child tools %v, want %v", st[0].Tools, want)
	}
	r, meta := e.taskResult(s.ID)
	if r.Message.Content[0].IsError || !strings.Contains(llm.Message{Content: r.Message.Content[0].Content}.Text(), "`notes.txt` has 2 lines") {
		t.Fatalf("task result %+v", r.Message.Content)
	}
	if meta.Session != childID || meta.Reason != session.ReasonCompleted || meta.Requests != 2 || meta.Usage == nil || meta.Usage.OutputTokens == 0 {
		t.Errorf("meta %+v", meta)
	}

	row, err := e.app.Store.GetSession(t.Context(), childID)
	if err != nil {
		t.Fatal(err)
	}
	if row.ParentID != s.ID || row.Kind != models.KindSubagent || row.OwnerID != e.alice.UserID || row.Workspace != s.Workspace.Path || row.Title != "Read the notes" {
		t.Errorf("child row %+v", row)
	}
	evs := e.childLog(childID)
	users := testkit.Find[llm.Message](t, evs, session.TypeUserMessage)
	var prompt *llm.Message
	for i := range users {
		if users[i].Source.Kind == llm.SourceAgent {
			prompt = &users[i]
		}
	}
	if prompt == nil || prompt.Text() != "read: notes.txt" || prompt.Source.Session != s.ID {
		t.Errorf("child prompt %+v", users)
	}
	ends := testkit.Find[session.TurnEnd](t, evs, session.TypeTurnEnd)
	if len(ends) != 1 || ends[0].Reason.Kind != session.ReasonCompleted {
		t.Errorf("child turns %+v", ends)
	}
	if got := lastHeaderTools(t, evs); !slices.Equal(got, []string{"glob", "grep", "read"}) {
		t.Errorf("child offered %v", got)
	}
	if got := lastHeaderTools(t, e.turnEvents(s.ID)); !slices.Contains(got, "task") {
		t.Errorf("parent offered %v, want task among them", got)
	}

	list, err := e.svc.ListSessions(t.Context(), e.alice, service.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list.Sessions {
		if r.ID == childID {
			t.Error("the child is in the session list")
		}
	}
}

// Access to a child follows the parent's: the owner, a collaborator and a
// viewer of the parent read it (as viewers: nobody drives it), a share
// link of the parent reads it, and a stranger or another session's link
// gets not found / unauthorized. Nobody sends to it or deletes it;
// deleting the parent deletes it.
func TestSubagentAccessFollowsTheParent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.shared(service.NewSession{Mode: session.ModeAsk})
	e.run(e.alice, s.ID, taskCall("Say hello", "hello"))
	childID := e.started(s.ID)[0].Session
	ctx := t.Context()

	for _, a := range []*auth.Actor{e.alice, e.carol, e.dave, e.root} {
		got, err := e.svc.GetSession(ctx, a, childID)
		if err != nil {
			t.Fatalf("%s reads the child: %v", a.Name, err)
		}
		if got.Role != auth.SessionRoleViewer || got.Kind != models.KindSubagent || got.ParentID != s.ID {
			t.Errorf("%s: role %s kind %q parent %q", a.Name, got.Role, got.Kind, got.ParentID)
		}
		if _, err := e.svc.Events(ctx, a, childID, -1, 100); err != nil {
			t.Errorf("%s reads the child's events: %v", a.Name, err)
		}
	}
	_, err := e.svc.GetSession(ctx, e.bob, childID)
	wantCode(t, "a stranger reads the child", err, service.CodeNotFound)
	_, err = e.svc.Events(ctx, e.bob, childID, -1, 100)
	wantCode(t, "a stranger reads the child's events", err, service.CodeNotFound)
	_, err = e.svc.SendMessage(ctx, e.alice, childID, service.Message{Content: "more"})
	wantCode(t, "the owner sends to the child", err, service.CodeForbidden)
	err = e.svc.Cancel(ctx, e.carol, childID, false)
	wantCode(t, "a collaborator cancels the child", err, service.CodeForbidden)
	err = e.svc.DeleteSession(ctx, e.alice, childID)
	wantCode(t, "the owner deletes the child", err, service.CodeForbidden)

	link, err := e.svc.CreateShareLink(ctx, e.alice, s.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	guest, err := e.app.Auth.ShareActor(ctx, link.Token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Events(ctx, guest, childID, -1, 100); err != nil {
		t.Errorf("the parent's share link reads the child: %v", err)
	}
	other, err := e.svc.CreateSession(ctx, e.alice, service.NewSession{Provider: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	otherLink, err := e.svc.CreateShareLink(ctx, e.alice, other.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := e.app.Auth.ShareActor(ctx, otherLink.Token)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Events(ctx, stranger, childID, -1, 100)
	wantCode(t, "another session's link reads the child", err, service.CodeUnauthorized)

	if err := e.svc.DeleteSession(ctx, e.alice, s.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetSession(ctx, e.root, childID)
	wantCode(t, "the child after the parent's deletion", err, service.CodeNotFound)
}

// The tool subset: in ask mode only read tools are available and asking
// for another is an error result the model can read (no child is made);
// in auto mode the child gets exactly the tools asked for, never task.
func TestTaskToolSubset(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.shared(service.NewSession{Mode: session.ModeAsk})
	e.run(e.alice, s.ID, taskCall("Run a command", "run: echo hi", "bash"))
	r, _ := e.taskResult(s.ID)
	if b := r.Message.Content[0]; !b.IsError || r.Error == nil || r.Error.Code != driver.CodeSubagentTools {
		t.Fatalf("bash for a child in ask mode: %+v %+v", b, r.Error)
	}
	if len(e.started(s.ID)) != 0 {
		t.Error("a child was started")
	}
	kids, err := e.app.Store.ChildSessions(t.Context(), s.ID)
	if err != nil || len(kids) != 0 {
		t.Fatalf("children %v %v", kids, err)
	}

	a := e.shared(service.NewSession{Mode: session.ModeAuto})
	e.run(e.alice, a.ID, taskCall("Only grep", "hello", "grep", "task"))
	r, _ = e.taskResult(a.ID)
	if r.Error == nil || r.Error.Code != driver.CodeSubagentTools {
		t.Fatalf("task for a child: %+v", r)
	}
	e.run(e.alice, a.ID, taskCall("Only grep", "hello", "grep"))
	st := e.started(a.ID)
	if len(st) != 1 || st[0].Mode != session.ModeAuto || !slices.Equal(st[0].Tools, []string{"grep"}) {
		t.Fatalf("started %+v", st)
	}
	if got := lastHeaderTools(t, e.childLog(st[0].Session)); !slices.Equal(got, []string{"grep"}) {
		t.Errorf("child offered %v", got)
	}
}

// Depth 1: a child is never offered task, and a child asked to call it
// gets the demo's "no such tool" answer; no grandchild exists.
func TestSubagentCannotStartSubagents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.shared(service.NewSession{Mode: session.ModeAuto})
	e.run(e.alice, s.ID, taskCall("Nest", taskCall("Deeper", "hello")))
	st := e.started(s.ID)
	if len(st) != 1 {
		t.Fatalf("started %+v", st)
	}
	child := st[0].Session
	evs := e.childLog(child)
	if got := lastHeaderTools(t, evs); slices.Contains(got, "task") || slices.Contains(got, "ask_user") || slices.Contains(got, "todo_write") {
		t.Errorf("child offered %v", got)
	}
	if calls := testkit.Find[session.ToolCall](t, evs, session.TypeToolCall); len(calls) != 0 {
		t.Errorf("the child called %+v", calls)
	}
	_, meta := e.taskResult(s.ID)
	if meta.Reason != session.ReasonCompleted {
		t.Errorf("child ended %q", meta.Reason)
	}
	kids, err := e.app.Store.ChildSessions(t.Context(), child)
	if err != nil || len(kids) != 0 {
		t.Errorf("grandchildren %v %v", kids, err)
	}
}

// Cancelling the parent's turn cancels the child's: the child's turn ends
// aborted by its parent, the parent's task result is an aborted error with
// the child in its meta, the parent's turn ends aborted, and both agents
// are idle afterwards.
func TestCancelParentCancelsSubagent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.shared(service.NewSession{Mode: session.ModeAsk})
	if _, err := e.svc.SendMessage(t.Context(), e.alice, s.ID, service.Message{Content: taskCall("Stream long", "long: 20000")}); err != nil {
		t.Fatal(err)
	}
	var child *driver.Agent
	poll.Eventually(t, "the child streams", func() bool {
		ag, ok := e.app.Manager.Lookup(s.ID)
		if !ok {
			return false
		}
		for _, ev := range ag.Log().Events(0, ag.Log().Len()) {
			if ev.Type != session.TypeSubagentStarted {
				continue
			}
			st, _ := session.Decode[session.SubagentStarted](ev)
			if c, ok := e.app.Manager.Lookup(st.Session); ok && c.Log().State().Step > 0 {
				child = c
				return true
			}
		}
		return false
	})
	if err := e.svc.Cancel(t.Context(), e.alice, s.ID, false); err != nil {
		t.Fatal(err)
	}
	e.idle(s.ID)
	e.app.WaitIdle(t, child.ID())

	ends := testkit.Find[session.TurnEnd](t, child.Log().Events(0, child.Log().Len()), session.TypeTurnEnd)
	if len(ends) != 1 || ends[0].Reason.Kind != session.ReasonAborted || ends[0].Reason.Cause == nil || ends[0].Reason.Cause.Kind != session.CauseParent {
		t.Errorf("child turn ends %+v", ends)
	}
	r, meta := e.taskResult(s.ID)
	if !r.Message.Content[0].IsError || r.Error == nil || r.Error.Code != session.CodeToolAborted || meta.Session != child.ID() {
		t.Errorf("task result %+v %+v meta %+v", r.Message.Content, r.Error, meta)
	}
	pe := testkit.Find[session.TurnEnd](t, e.turnEvents(s.ID), session.TypeTurnEnd)
	if len(pe) != 1 || pe[0].Reason.Kind != session.ReasonAborted {
		t.Errorf("parent turn ends %+v", pe)
	}
	if child.Status() != driver.StatusIdle {
		t.Error("the child still runs")
	}
}

// A stored parent with a child survives a restart: the parent's page
// (what the chat page folds) shows the task card linked to the child, the
// child's log loads for the parent's readers, its reloaded agent still
// takes no input and is offered no task; a restart in the middle of a
// task ends both turns aborted and starts nothing again.
func TestSubagentAfterRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.shared(service.NewSession{Mode: session.ModeAsk})
	e.run(e.alice, s.ID, taskCall("Say hello", "hello"))
	childID := e.started(s.ID)[0].Session

	e.app.Restart()
	e.svc = e.app.Service
	ctx := t.Context()
	page, err := e.svc.PageSession(ctx, e.dave, s.ID, 40)
	if err != nil {
		t.Fatal(err)
	}
	tr := render.NewMarkdown().Fold(page.Events, render.FoldOptions{ViewerID: e.dave.UserID})
	var card *render.ToolItem
	for _, it := range tr.Items {
		if ti, ok := it.(*render.ToolItem); ok && ti.Name == "task" {
			card = ti
		}
	}
	if card == nil || card.Subagent == nil || card.Subagent.Session != childID || card.Status != render.ToolOK || card.Subagent.Usage == nil {
		t.Fatalf("the task card after a restart: %+v", card)
	}
	evs, err := e.svc.Events(ctx, e.dave, childID, -1, 500)
	if err != nil || len(evs.Events) == 0 {
		t.Fatalf("the child's events after a restart: %d, %v", len(evs.Events), err)
	}
	ag, err := e.app.Manager.Get(ctx, childID)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ag.Tools().Lookup("task"); ok {
		t.Error("the reloaded child is offered task")
	}
	if err := ag.Followup(ctx, llm.UserText("again", llm.Source{Kind: llm.SourceUser})); !errors.Is(err, driver.ErrSubagent) {
		t.Errorf("a followup to the reloaded child: %v", err)
	}

	// A restart while the child streams.
	if _, err := e.svc.SendMessage(ctx, e.alice, s.ID, service.Message{Content: taskCall("Stream long", "long: 20000")}); err != nil {
		t.Fatal(err)
	}
	var second string
	poll.Eventually(t, "the second child streams", func() bool {
		p, ok := e.app.Manager.Lookup(s.ID)
		if !ok {
			return false
		}
		for _, ev := range p.Log().Events(0, p.Log().Len()) {
			if st, err := session.Decode[session.SubagentStarted](ev); err == nil && ev.Type == session.TypeSubagentStarted && st.Session != childID {
				if c, ok := e.app.Manager.Lookup(st.Session); ok && c.Log().State().Step > 0 {
					second = st.Session
					return true
				}
			}
		}
		return false
	})
	e.app.Restart()
	e.svc = e.app.Service
	if err := e.app.Manager.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{s.ID, second} {
		ag, err := e.app.Manager.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if ag.Status() != driver.StatusIdle {
			t.Errorf("%s runs after the restart", id)
		}
		ends := testkit.Find[session.TurnEnd](t, ag.Log().Events(0, ag.Log().Len()), session.TypeTurnEnd)
		if last := ends[len(ends)-1]; last.Reason.Kind != session.ReasonAborted {
			t.Errorf("%s's last turn ended %+v", id, last.Reason)
		}
	}
}

// A parent switched out of auto in the middle of a task narrows its
// child at once: the child's write after the switch is refused as in
// read-only mode, and the file is not written.
func TestParentLeavingAutoStopsTheChildsWrites(t *testing.T) {
	t.Parallel()
	_, route := testkit.FakeRoute(t, fake.Script{Responder: func(rec fake.Recorded) fake.Reply {
		if rec.Header.Get("X-Harness-Purpose") != "" {
			return fake.Reply{Text: "A title"}
		}
		msgs := rec.Messages()
		child := slices.ContainsFunc(msgs, func(m fake.WireMessage) bool {
			return m.Role == "user" && strings.Contains(m.Text(), "write the report")
		})
		switch last := msgs[len(msgs)-1]; {
		case last.Role == "tool":
			return fake.Reply{Text: "finished"}
		case child:
			// A slow answer, then a write.
			return fake.Reply{Text: strings.Repeat("thinking about it ", 30), Chunks: 30, Delay: 40 * time.Millisecond,
				ToolCalls: []fake.ToolCall{{Name: "write", Arguments: `{"file_path": "report.txt", "content": "done"}`}}}
		}
		return fake.Reply{ToolCalls: []fake.ToolCall{{Name: "task", Arguments: `{"description": "Report", "prompt": "write the report"}`}}}
	}}, testkit.RouteOptions{Name: "scripted"})
	e := newEnvWith(t, route)
	ctx := t.Context()
	s := e.shared(service.NewSession{Mode: session.ModeAuto, Provider: "scripted"})
	if _, err := e.svc.SendMessage(ctx, e.alice, s.ID, service.Message{Content: "go"}); err != nil {
		t.Fatal(err)
	}
	var child *driver.Agent
	poll.Eventually(t, "the child streams", func() bool {
		ag, ok := e.app.Manager.Lookup(s.ID)
		if !ok {
			return false
		}
		for _, ev := range ag.Log().Events(0, ag.Log().Len()) {
			if ev.Type == session.TypeSubagentStarted {
				st, _ := session.Decode[session.SubagentStarted](ev)
				if c, ok := e.app.Manager.Lookup(st.Session); ok && slices.ContainsFunc(c.Log().Events(0, c.Log().Len()), func(ev session.Event) bool { return ev.Type == session.TypeAssistantChunk }) {
					child = c
					return true
				}
			}
		}
		return false
	})
	if err := e.svc.SetMode(ctx, e.alice, s.ID, session.ModeAsk); err != nil {
		t.Fatal(err)
	}
	e.idle(s.ID)
	e.app.WaitIdle(t, child.ID())
	results := testkit.Find[session.ToolResult](t, child.Log().Events(0, child.Log().Len()), session.TypeToolResult)
	if len(results) != 1 || !results[0].Message.Content[0].IsError || !strings.Contains(llm.Message{Content: results[0].Message.Content[0].Content}.Text(), "read-only") {
		t.Fatalf("the child's write: %+v", results)
	}
	if _, err := os.Stat(filepath.Join(s.Workspace.Path, "report.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the file was written after the parent left auto: %v", err)
	}
}
