package service_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/models"
	"harness/internal/service"
	"harness/internal/session"
)

// TestForkCopyRepairedAfterACrash builds the two states a crash can leave
// a fork in and runs the start's repair on them twice: a copy cut short is
// failed once (transcript event, emptied workspace, sends, forks and tools
// refused, delete works); a copy whose outcome was logged just before the
// crash is only recorded on the row.
func TestForkCopyRepairedAfterACrash(t *testing.T) {
	t.Parallel()
	e := newWorkspaceEnv(t, 1<<20)
	ctx := t.Context()
	parent, err := e.svc.CreateSession(ctx, e.alice, service.NewSession{Mode: session.ModeAuto})
	if err != nil {
		t.Fatal(err)
	}
	mkdir(t, filepath.Join(parent.Workspace.Path, "src"), "app.txt", "hello fork\n")

	// Cut short: as a crash mid-copy leaves it, preparing with part of the
	// files and no outcome in the log.
	cut, err := e.svc.CreateSession(ctx, e.alice, service.NewSession{Mode: session.ModeAuto})
	if err != nil {
		t.Fatal(err)
	}
	mkdir(t, filepath.Join(cut.Workspace.Path, "src"), "half.txt", "half a copy\n")
	setRow(t, e, cut.ID, map[string]any{"workspace_kind": "fork", "workspace_source": parent.ID, "parent_id": parent.ID, "workspace_state": models.WorkspacePreparing})

	// Logged: the copy's workspace/ready is in the log, the row was not
	// updated yet.
	logged, err := e.svc.Fork(ctx, e.alice, parent.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if logged.Workspace.State != service.WorkspaceReady {
		t.Fatalf("a finished fork is %q", logged.Workspace.State)
	}
	setRow(t, e, logged.ID, map[string]any{"workspace_state": models.WorkspacePreparing})

	for restart := range 2 {
		if err := e.svc.ResumeWorkspaces(context.Background()); err != nil {
			t.Fatalf("restart %d: %v", restart, err)
		}
		for _, c := range []struct {
			name      string
			id        string
			state     string
			failed    int // workspace/failed events
			ready     int // workspace/ready events
			wantFiles bool
		}{
			{name: "cut short", id: cut.ID, state: models.WorkspaceInterrupted, failed: 1, ready: 0, wantFiles: false},
			{name: "logged", id: logged.ID, state: models.WorkspaceReady, failed: 0, ready: 1, wantFiles: true},
		} {
			row, err := e.app.Store.GetSession(ctx, c.id)
			if err != nil {
				t.Fatal(err)
			}
			if row.WorkspaceState != c.state {
				t.Errorf("restart %d, %s: state %q, want %q", restart, c.name, row.WorkspaceState, c.state)
			}
			if n := countType(t, e, c.id, session.TypeWorkspaceFailed); n != c.failed {
				t.Errorf("restart %d, %s: %d workspace/failed, want %d", restart, c.name, n, c.failed)
			}
			if n := countType(t, e, c.id, session.TypeWorkspaceReady); n != c.ready {
				t.Errorf("restart %d, %s: %d workspace/ready, want %d", restart, c.name, n, c.ready)
			}
			ents, _ := os.ReadDir(row.Workspace)
			if (len(ents) > 0) != c.wantFiles {
				t.Errorf("restart %d, %s: %d entries in the workspace", restart, c.name, len(ents))
			}
		}
	}
	f := lastEvent[session.WorkspaceFailed](t, e.env, cut.ID, session.TypeWorkspaceFailed)
	if !f.Interrupted || f.Kind != "fork" || f.Source != parent.ID || !strings.Contains(f.Error, "server stopped while copying") {
		t.Fatalf("workspace/failed %+v", f)
	}

	// Sends and forks are refused with the not-ready code, saying what to do.
	_, err = e.svc.SendMessage(ctx, e.alice, cut.ID, service.Message{Content: "hello"})
	wantCode(t, "a send", err, service.CodeWorkspaceNotReady)
	if !strings.Contains(err.Error(), "delete this session") {
		t.Fatalf("the refusal does not say what to do: %v", err)
	}
	_, err = e.svc.Fork(ctx, e.alice, cut.ID, nil)
	wantCode(t, "a fork", err, service.CodeWorkspaceNotReady)
	e.run(e.alice, logged.ID, "hello") // the finished fork takes input

	// Input that reaches the agent anyway (queued before) runs no tool.
	ag, ok := e.app.Manager.Lookup(cut.ID)
	if !ok {
		t.Fatal("not loaded")
	}
	if err := ag.Followup(ctx, llm.UserText("run: echo ran > ran.txt", llm.Source{Kind: llm.SourceUser})); err != nil {
		t.Fatal(err)
	}
	e.idle(cut.ID)
	var refused *session.ToolError
	for _, ev := range ag.Log().Events(0, ag.Log().Len()) {
		if ev.Type == session.TypeToolResult {
			r, _ := session.Decode[session.ToolResult](ev)
			refused = r.Error
		}
	}
	if refused == nil || refused.Code != driver.CodeWorkspaceNotReady {
		t.Fatalf("tool result error %+v, want %s", refused, driver.CodeWorkspaceNotReady)
	}
	if _, err := os.Stat(filepath.Join(cut.Workspace.Path, "ran.txt")); err == nil {
		t.Fatal("a tool ran in the incomplete workspace")
	}

	if err := e.svc.DeleteSession(ctx, e.alice, cut.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cut.Workspace.Path); !os.IsNotExist(err) {
		t.Fatalf("the workspace survives the session: %v", err)
	}
}

// setRow changes columns of a session row, as a crash leaves them.
func setRow(t *testing.T, e *wsEnv, id string, cols map[string]any) {
	t.Helper()
	if err := e.app.Store.DB.W.Model(&models.Session{}).Where("id = ?", id).Updates(cols).Error; err != nil {
		t.Fatal(err)
	}
}

// countType counts the events of type typ in a loaded session's log.
func countType(t *testing.T, e *wsEnv, id string, typ session.Type) int {
	t.Helper()
	ag, ok := e.app.Manager.Lookup(id)
	if !ok {
		t.Fatal("not loaded")
	}
	n := 0
	for _, ev := range ag.Log().Events(0, ag.Log().Len()) {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// TestRepairTakenOverFailsOnlyForks: after a takeover a fork's copy left
// preparing is failed once; a clone left preparing waits for a start (the
// old owner's git may still write it), and a ready session is untouched.
func TestRepairTakenOverFailsOnlyForks(t *testing.T) {
	t.Parallel()
	e := newWorkspaceEnv(t, 1<<20)
	ctx := t.Context()
	parent, err := e.svc.CreateSession(ctx, e.alice, service.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		cols  map[string]any
		state string
	}{
		{"a fork's copy", map[string]any{"workspace_kind": "fork", "workspace_source": parent.ID, "workspace_state": models.WorkspacePreparing}, models.WorkspaceInterrupted},
		{"a clone", map[string]any{"workspace_kind": "clone", "workspace_source": e.projects, "workspace_state": models.WorkspacePreparing}, models.WorkspacePreparing},
		{"a ready fork", map[string]any{"workspace_kind": "fork", "workspace_source": parent.ID}, models.WorkspaceReady},
	} {
		s, err := e.svc.CreateSession(ctx, e.alice, service.NewSession{})
		if err != nil {
			t.Fatal(err)
		}
		setRow(t, e, s.ID, c.cols)
		for range 2 {
			if err := e.svc.RepairTakenOver(ctx, s.ID); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		row, err := e.app.Store.GetSession(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		wantFailed := 0
		if c.state == models.WorkspaceInterrupted {
			wantFailed = 1
		}
		if row.WorkspaceState != c.state || countType(t, e, s.ID, session.TypeWorkspaceFailed) != wantFailed {
			t.Errorf("%s: state %q, %d workspace/failed; want %q, %d", c.name, row.WorkspaceState,
				countType(t, e, s.ID, session.TypeWorkspaceFailed), c.state, wantFailed)
		}
	}
}
