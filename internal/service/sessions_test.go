package service_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"harness/internal/auth"
	"harness/internal/driver"
	"harness/internal/service"
	"harness/internal/session"
)

func TestCreateSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	s, err := e.svc.CreateSession(ctx, e.alice, service.NewSession{Title: "  Plan the trip  ", Mode: session.ModeAuto})
	if err != nil {
		t.Fatal(err)
	}
	if s.Title != "Plan the trip" || s.Mode != session.ModeAuto || s.OwnerID != e.alice.UserID || s.Role != auth.SessionRoleOwner {
		t.Fatalf("session %+v", s.SessionRow)
	}
	if s.Provider != "demo" || s.Model != "demo" || s.Status != driver.StatusIdle {
		t.Fatalf("route %s/%s status %s, want the default demo route, idle", s.Provider, s.Model, s.Status)
	}
	if fi, err := os.Stat(filepath.Join(e.app.WorkspaceRoot(), s.ID)); err != nil || !fi.IsDir() {
		t.Fatalf("workspace: %v", err)
	}
	// The mode and the pinned title are in the log.
	ag, _ := e.app.Manager.Lookup(s.ID)
	st := ag.Log().State()
	if st.Mode != session.ModeAuto || st.Title != "Plan the trip" {
		t.Fatalf("log state %+v", st)
	}

	for _, tt := range []struct {
		name string
		a    *auth.Actor
		opts service.NewSession
		want service.Code
	}{
		{"anonymous", nil, service.NewSession{}, service.CodeUnauthorized},
		{"share link", &auth.Actor{Via: auth.ViaShare, ShareSessionID: s.ID}, service.NewSession{}, service.CodeUnauthorized},
		{"bad mode", e.alice, service.NewSession{Mode: "yolo"}, service.CodeBadRequest},
		{"unknown provider", e.alice, service.NewSession{Provider: "nope"}, service.CodeBadRequest},
		{"model without provider", e.alice, service.NewSession{Model: "x"}, service.CodeBadRequest},
		{"long title", e.alice, service.NewSession{Title: strings.Repeat("t", 300)}, service.CodeBadRequest},
		{"two-line title", e.alice, service.NewSession{Title: "a\nb"}, service.CodeBadRequest},
	} {
		_, err := e.svc.CreateSession(ctx, tt.a, tt.opts)
		wantCode(t, tt.name, err, tt.want)
	}
}

func TestListSessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	var ids []string
	for _, title := range []string{"alpha", "beta", "gamma"} {
		s, err := e.svc.CreateSession(ctx, e.alice, service.NewSession{Title: title})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	shared := e.shared(service.NewSession{Title: "shared"})
	bobs, err := e.svc.CreateSession(ctx, e.bob, service.NewSession{Title: "bob's"})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	if _, err := e.svc.UpdateSession(ctx, e.alice, ids[0], service.Patch{Archived: &yes}); err != nil {
		t.Fatal(err)
	}

	titles := func(a *auth.Actor, q service.ListQuery) []string {
		t.Helper()
		l, err := e.svc.ListSessions(ctx, a, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range l.Sessions {
			out = append(out, r.Title+":"+string(r.Role))
		}
		return out
	}
	no := false
	tests := []struct {
		name string
		a    *auth.Actor
		q    service.ListQuery
		want string
	}{
		// alpha was archived last, so it is the newest.
		{"owner, all", e.alice, service.ListQuery{}, "alpha:owner shared:owner gamma:owner beta:owner"},
		{"owner, not archived", e.alice, service.ListQuery{Archived: &no}, "shared:owner gamma:owner beta:owner"},
		{"owner, archived", e.alice, service.ListQuery{Archived: &yes}, "alpha:owner"},
		{"owner, search", e.alice, service.ListQuery{Q: "AMM"}, "gamma:owner"},
		{"collaborator", e.carol, service.ListQuery{}, "shared:collaborator"},
		{"viewer", e.dave, service.ListQuery{}, "shared:viewer"},
		{"other user", e.bob, service.ListQuery{}, "bob's:owner"},
		{"admin", e.root, service.ListQuery{Archived: &no}, "bob's:admin shared:admin gamma:admin beta:admin"},
	}
	for _, tt := range tests {
		if got := strings.Join(titles(tt.a, tt.q), " "); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}

	// Paging walks every row once.
	var seen []string
	q := service.ListQuery{Limit: 2}
	for {
		l, err := e.svc.ListSessions(ctx, e.alice, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.Sessions {
			seen = append(seen, r.ID)
		}
		if l.Next == "" {
			break
		}
		q.Cursor = l.Next
	}
	if len(seen) != 4 {
		t.Fatalf("paging saw %d sessions, want 4", len(seen))
	}
	_, err = e.svc.ListSessions(ctx, e.alice, service.ListQuery{Cursor: "garbage"})
	wantCode(t, "bad cursor", err, service.CodeBadRequest)
	_, err = e.svc.ListSessions(ctx, nil, service.ListQuery{})
	wantCode(t, "anonymous", err, service.CodeUnauthorized)
	_ = shared
	_ = bobs
}

func TestGetSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	s := e.shared(service.NewSession{})
	e.run(e.carol, s.ID, "hello")
	for _, tt := range []struct {
		a    *auth.Actor
		role auth.SessionRole
		code service.Code
	}{
		{e.alice, auth.SessionRoleOwner, ""},
		{e.carol, auth.SessionRoleCollaborator, ""},
		{e.dave, auth.SessionRoleViewer, ""},
		{e.root, auth.SessionRoleAdmin, ""},
		{e.bob, "", service.CodeNotFound},
		{nil, "", service.CodeUnauthorized},
	} {
		got, err := e.svc.GetSession(ctx, tt.a, s.ID)
		wantCode(t, "get", err, tt.code)
		if err == nil && got.Role != tt.role {
			t.Errorf("role %q, want %q", got.Role, tt.role)
		}
		if err == nil && (got.Head < 5 || got.Title != "hello" || got.Queue.Queued == nil || got.Interactions == nil) {
			t.Errorf("session %+v: want a head, the fallback title and empty (not null) lists", got)
		}
	}
	_, err := e.svc.GetSession(ctx, e.alice, "no-such-session")
	wantCode(t, "unknown session", err, service.CodeNotFound)
}

func TestUpdateSessionRights(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	s := e.shared(service.NewSession{})
	title, auto, demo := "new name", session.ModeAuto, "demo"
	yes := true
	tests := []struct {
		name string
		a    *auth.Actor
		p    service.Patch
		want service.Code
	}{
		{"nothing", e.alice, service.Patch{}, service.CodeBadRequest},
		{"collaborator renames", e.carol, service.Patch{Title: &title}, service.CodeForbidden},
		{"collaborator archives", e.carol, service.Patch{Archived: &yes}, service.CodeForbidden},
		{"viewer sets mode", e.dave, service.Patch{Mode: &auto}, service.CodeForbidden},
		{"other sets mode", e.bob, service.Patch{Mode: &auto}, service.CodeNotFound},
		{"collaborator sets mode", e.carol, service.Patch{Mode: &auto}, ""},
		{"collaborator sets model", e.carol, service.Patch{Provider: &demo}, ""},
		{"owner renames", e.alice, service.Patch{Title: &title}, ""},
		{"admin archives", e.root, service.Patch{Archived: &yes}, ""},
	}
	for _, tt := range tests {
		_, err := e.svc.UpdateSession(ctx, tt.a, s.ID, tt.p)
		wantCode(t, tt.name, err, tt.want)
	}
	got, err := e.svc.GetSession(ctx, e.alice, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != title || got.Mode != auto || !got.Archived {
		t.Fatalf("after the patches: %+v", got.SessionRow)
	}
	ag, _ := e.app.Manager.Lookup(s.ID)
	var titles, modes int
	for _, ev := range ag.Log().Events(0, ag.Log().Len()) {
		switch ev.Type {
		case session.TypeSessionTitle:
			titles++
		case session.TypePermissionMode:
			modes++
		}
	}
	if titles != 1 || modes != 1 {
		t.Fatalf("%d title and %d mode events, want 1 and 1 (refused patches append nothing)", titles, modes)
	}
}

func TestDeleteSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	s := e.shared(service.NewSession{})
	e.run(e.alice, s.ID, "hello")
	ws := filepath.Join(e.app.WorkspaceRoot(), s.ID)
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CreateShareLink(ctx, e.alice, s.ID, nil); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "collaborator deletes", e.svc.DeleteSession(ctx, e.carol, s.ID), service.CodeForbidden)
	wantCode(t, "other deletes", e.svc.DeleteSession(ctx, e.bob, s.ID), service.CodeNotFound)

	var changes []service.Change
	cancel := e.svc.SubscribeChanges(func(c service.Change) { changes = append(changes, c) })
	defer cancel()
	if err := e.svc.DeleteSession(ctx, e.alice, s.ID); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.GetSession(ctx, e.alice, s.ID)
	wantCode(t, "get after delete", err, service.CodeNotFound)
	db := e.app.DB.R
	var events, members, links int64
	db.Table("events").Where("session_id = ?", s.ID).Count(&events)
	db.Table("members").Where("session_id = ?", s.ID).Count(&members)
	db.Table("share_links").Where("session_id = ?", s.ID).Count(&links)
	if events+members+links != 0 {
		t.Fatalf("left behind: %d events, %d members, %d links", events, members, links)
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Fatalf("workspace still there: %v", err)
	}
	if _, ok := e.app.Manager.Lookup(s.ID); ok {
		t.Fatal("agent still loaded")
	}
	if len(changes) != 1 || changes[0].Kind != service.ChangeDeleted || len(changes[0].Users) != 3 {
		t.Fatalf("changes %+v, want one deletion for owner and two members", changes)
	}
	wantCode(t, "delete again", e.svc.DeleteSession(ctx, e.alice, s.ID), service.CodeNotFound)
}

// TestPageReads: the reads a page makes in one call (one authorization):
// the chat page's newest page and session, a history page, the sharing
// page. Readers get them, others not_found, and only who may share gets
// the sharing page.
func TestPageReads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	s := e.shared(service.NewSession{})
	e.run(e.alice, s.ID, "hello")
	for _, tt := range []struct {
		name          string
		a             *auth.Actor
		read, sharing service.Code
	}{
		{"owner", e.alice, "", ""},
		{"admin", e.root, "", ""},
		{"collaborator", e.carol, "", service.CodeForbidden},
		{"viewer", e.dave, "", service.CodeForbidden},
		{"other", e.bob, service.CodeNotFound, service.CodeNotFound},
		{"anonymous", nil, service.CodeUnauthorized, service.CodeUnauthorized},
	} {
		page, err := e.svc.PageSession(ctx, tt.a, s.ID, 40)
		wantCode(t, tt.name+" page", err, tt.read)
		if err == nil && (len(page.Events) == 0 || page.More || page.ID != s.ID || page.Role == auth.SessionRoleNone) {
			t.Errorf("%s page: %d events, more %v, session %q, role %q", tt.name, len(page.Events), page.More, page.ID, page.Role)
		}
		head := int64(len(page.Events))
		_, _, err = e.svc.HistoryPage(ctx, tt.a, s.ID, max(head, 1), 40)
		wantCode(t, tt.name+" history", err, tt.read)
		sh, err := e.svc.Sharing(ctx, tt.a, s.ID)
		wantCode(t, tt.name+" sharing", err, tt.sharing)
		if err == nil && (sh.Row.ID != s.ID || len(sh.Members) != 2 || sh.Links == nil) {
			t.Errorf("%s sharing: %+v", tt.name, sh)
		}
	}
	_, _, err := e.svc.HistoryPage(ctx, e.alice, s.ID, 0, 40)
	wantCode(t, "history before 0", err, service.CodeBadRequest)
}
