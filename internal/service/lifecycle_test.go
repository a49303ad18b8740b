package service_test

import (
	"bytes"
	"testing"

	"harness/internal/service"
	"harness/internal/session"
)

// Case 9 through the real fork path (service.Fork → driver ForkSeed →
// CreateSeeded): forking after a turn/end and a log-only event seeds the
// child with both; the child's header names the parent and the seed length;
// its cwd is its own workspace (a copy of the parent's), not the parent's
// (docs/lifecycle.md "Forks work in their own workspace").
func TestCase09ForkThroughService(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	src := e.shared(service.NewSession{Title: "source", Mode: session.ModeAuto})
	e.run(e.alice, src.ID, "first")
	// A log-only event after the turn's end is inside the default boundary.
	if err := e.svc.SetMode(ctx, e.alice, src.ID, session.ModeAsk); err != nil {
		t.Fatal(err)
	}
	parent, _ := e.app.Manager.Lookup(src.ID)
	pev := parent.Log().Events(0, parent.Log().Len())
	if pev[len(pev)-1].Type != session.TypePermissionMode {
		t.Fatalf("parent log ends %s", pev[len(pev)-1].Type)
	}

	child, err := e.svc.Fork(ctx, e.alice, src.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	cag, ok := e.app.Manager.Lookup(child.ID)
	if !ok {
		t.Fatal("the fork is not live")
	}
	h := cag.Log().Header()
	if h.ID != child.ID || h.ParentSession != src.ID || h.SeedLength != int64(len(pev)) {
		t.Fatalf("child header %+v, want parent %s and seed length %d", h, src.ID, len(pev))
	}
	if h.Cwd == "" || h.Cwd != child.Workspace.Path || h.Cwd == parent.Workspace() || cag.Workspace() != h.Cwd {
		t.Fatalf("child cwd %q, workspace %q, parent's %q", h.Cwd, child.Workspace.Path, parent.Workspace())
	}
	cev := cag.Log().Events(0, cag.Log().Len())
	for i := range pev {
		if cev[i].Type != pev[i].Type || !bytes.Equal(cev[i].Data, pev[i].Data) {
			t.Fatalf("seed event %d differs", i)
		}
	}
	if cev[len(pev)].Type != session.TypeEndSeed || cag.Log().State().Mode != session.ModeAsk {
		t.Fatalf("after the seed: %s; mode %s", cev[len(pev)].Type, cag.Log().State().Mode)
	}
	if q := cag.Queue(); len(q.Queued)+len(q.Steering) != 0 {
		t.Fatalf("the fork inherited a queue: %+v", q)
	}
}
