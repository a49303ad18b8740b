package testkit_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"harness/internal/auth"
	"harness/internal/compact"
	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/models"
	"harness/internal/service"
	"harness/internal/session"
	"harness/internal/testkit"
)

// The default route follows the app's rule: the script's, else the first
// extra route, else the demo.
func TestStackDefaultRoute(t *testing.T) {
	t.Parallel()
	extra := func(t *testing.T) llm.Provider {
		_, p := testkit.FakeRoute(t, fake.Script{}, testkit.RouteOptions{Name: "extra", Model: "extra-model"})
		return p
	}
	script := &fake.Script{Replies: []fake.Reply{{Text: "hi"}}}
	tests := []struct {
		name      string
		opts      func(t *testing.T) testkit.StackOptions
		want      string
		wantNames []string
	}{
		{"demo", func(*testing.T) testkit.StackOptions { return testkit.StackOptions{Demo: true} }, "demo", []string{"demo"}},
		{"an extra route beats the demo", func(t *testing.T) testkit.StackOptions {
			return testkit.StackOptions{Demo: true, Providers: []llm.Provider{extra(t)}}
		}, "extra", []string{"demo", "extra"}},
		{"the script beats an extra route", func(t *testing.T) testkit.StackOptions {
			return testkit.StackOptions{Script: script, Providers: []llm.Provider{extra(t)}}
		}, "fake", []string{"extra", "fake"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := testkit.NewStack(t, tt.opts(t))
			if p, _ := st.Providers.Default(); p != tt.want {
				t.Errorf("default route %q, want %q", p, tt.want)
			}
			var names []string
			for _, info := range st.Providers.List() {
				names = append(names, info.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.wantNames, ",") {
				t.Errorf("routes %q, want %q", names, tt.wantNames)
			}
			if (st.Fake != nil) != (tt.want == "fake") {
				t.Errorf("Fake server %v with script %v", st.Fake, tt.want == "fake")
			}
		})
	}
}

// A turn through the service on the demo model reaches the store; the
// session's fresh workspace is under the stack's directory.
func TestStackRunsATurnThroughTheService(t *testing.T) {
	t.Parallel()
	st := testkit.NewStack(t, testkit.StackOptions{Demo: true, DemoOptions: []fake.Option{fake.WithChunkDelay(0)}, VerifyRequests: true})
	ada, root := st.Actor("ada", false), st.Actor("root", true)
	if ada.Role != auth.RoleUser || root.Role != auth.RoleAdmin || ada.Via != auth.ViaToken {
		t.Fatalf("actors %+v %+v", ada, root)
	}
	s, err := st.Service.CreateSession(t.Context(), ada, service.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Workspace.Path != filepath.Join(st.WorkspaceRoot(), s.ID) || !strings.HasPrefix(st.WorkspaceRoot(), st.Dir) {
		t.Errorf("workspace %q, fresh root %q, dir %q", s.Workspace.Path, st.WorkspaceRoot(), st.Dir)
	}
	if _, err := st.Service.SendMessage(t.Context(), ada, s.ID, service.Message{Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	st.WaitIdle(t, s.ID)
	ag, ok := st.Manager.Lookup(s.ID)
	if !ok {
		t.Fatal("the session is not loaded")
	}
	testkit.CheckLog(t, st.Store, ag.Log(), s.ID)
	if ends := testkit.Find[session.TurnEnd](t, ag.Log().Events(0, ag.Log().Len()), session.TypeTurnEnd); len(ends) != 1 || ends[0].Reason.Kind != session.ReasonCompleted {
		t.Fatalf("turn ends %+v", ends)
	}
}

// wrappedStore stands for a test's store wrapper (a fault injector).
type wrappedStore struct {
	driver.Store
}

// Restart builds a new manager and service on the same store, with the
// same options: the store wrapper and compaction apply again, and a
// session's log is loaded back from the store.
func TestStackRestart(t *testing.T) {
	t.Parallel()
	var wraps atomic.Int32
	st := testkit.NewStack(t, testkit.StackOptions{
		Script: &fake.Script{Replies: []fake.Reply{{Text: "one"}, {Text: "two"}}},
		Plain:  true,
		Store: func(s driver.Store) driver.Store {
			wraps.Add(1)
			return wrappedStore{s}
		},
		Compaction: &compact.Options{},
	})
	if st.Compaction.Meter == nil || st.Compaction.Providers != st.Providers || st.Compaction.Logger == nil {
		t.Fatalf("compaction options not filled: %+v", st.Compaction)
	}
	ag := st.CreateAgent(&models.Session{ID: "s1", OwnerID: "u1", Workspace: st.PlainWorkspace()})
	send := func(ag *driver.Agent, text string) {
		t.Helper()
		if err := ag.Followup(t.Context(), llm.UserText(text, llm.Source{Kind: llm.SourceUser, UserID: "u1"})); err != nil {
			t.Fatal(err)
		}
		st.WaitIdle(t, "s1")
	}
	send(ag, "first")
	mgr, svc := st.Manager, st.Service
	st.Restart()
	if st.Manager == mgr || st.Service == svc {
		t.Fatal("Restart kept the manager or the service")
	}
	if _, ok := st.Manager.Lookup("s1"); ok {
		t.Fatal("the new manager has the session loaded before asking")
	}
	ag, err := st.Manager.Get(t.Context(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	send(ag, "second")
	testkit.CheckLog(t, st.Store, ag.Log(), "s1")
	if n := len(testkit.Find[session.TurnEnd](t, ag.Log().Events(0, ag.Log().Len()), session.TypeTurnEnd)); n != 2 {
		t.Fatalf("%d turns after the restart, want 2", n)
	}
	if n := wraps.Load(); n != 2 {
		t.Errorf("the store was wrapped %d times, want once per start (2)", n)
	}
	st.Shutdown()
	st.Shutdown() // a second call (and the cleanup's) does nothing
}

// A stack on a given database and accounts builds on them and leaves the
// database open for its owner.
func TestStackOnAGivenDatabase(t *testing.T) {
	t.Parallel()
	owner := testkit.NewStack(t, testkit.StackOptions{})
	t.Run("inner", func(t *testing.T) {
		st := testkit.NewStack(t, testkit.StackOptions{DB: owner.DB, Auth: owner.Auth, Demo: true})
		if st.DB != owner.DB || st.Auth != owner.Auth {
			t.Fatal("the given database or accounts were replaced")
		}
		st.Actor("ada", false)
	})
	// The inner stack is closed; the database is not.
	if _, err := owner.Auth.CreateToken(context.Background(), "ada", "after"); err != nil {
		t.Fatalf("the owner's database after the inner stack closed: %v", err)
	}
}
