package service_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"harness/internal/auth"
	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/models"
	"harness/internal/service"
	"harness/internal/session"
	"harness/internal/testkit/poll"
)

func TestSendMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	s := e.shared(service.NewSession{})
	tests := []struct {
		name string
		a    *auth.Actor
		m    service.Message
		want service.Code
	}{
		{"empty", e.alice, service.Message{Content: " \n "}, service.CodeBadRequest},
		{"too large", e.alice, service.Message{Content: strings.Repeat("x", service.MaxMessageBytes+1)}, service.CodeTooLarge},
		{"bad mode", e.alice, service.Message{Content: "x", Mode: "shout"}, service.CodeBadRequest},
		{"viewer", e.dave, service.Message{Content: "x"}, service.CodeForbidden},
		{"other", e.bob, service.Message{Content: "x"}, service.CodeNotFound},
		{"anonymous", nil, service.Message{Content: "x"}, service.CodeUnauthorized},
	}
	for _, tt := range tests {
		_, err := e.svc.SendMessage(ctx, tt.a, s.ID, tt.m)
		wantCode(t, tt.name, err, tt.want)
	}
	ag, _ := e.app.Manager.Lookup(s.ID)
	if n := ag.Log().Len(); n != 0 {
		t.Fatalf("refused messages appended %d events", n)
	}
	id, err := e.svc.SendMessage(ctx, e.carol, s.ID, service.Message{Content: "hello there", ClientID: "req-7"})
	if err != nil {
		t.Fatal(err)
	}
	e.idle(s.ID)
	var got *llm.Message
	for _, ev := range ag.Log().Events(0, ag.Log().Len()) {
		if ev.Type == session.TypeUserMessage {
			if m, _ := session.Decode[llm.Message](ev); m.ID == id {
				got = &m
			}
		}
	}
	want := llm.Source{Kind: llm.SourceUser, UserID: e.carol.UserID, Name: "carol", ClientID: "req-7"}
	if got == nil || got.Source != want || got.Text() != "hello there" {
		t.Fatalf("logged message %+v, want source %+v", got, want)
	}
}

// queueWhileRunning starts a long turn and queues two followups.
func queueWhileRunning(t *testing.T, e *env, id string) (string, string) {
	t.Helper()
	ctx := t.Context()
	if _, err := e.svc.SendMessage(ctx, e.alice, id, service.Message{Content: "long: 2000"}); err != nil {
		t.Fatal(err)
	}
	ag, _ := e.app.Manager.Lookup(id)
	poll.Eventually(t, "the first prompt to be claimed", func() bool { return len(ag.Queue().Queued) == 0 },
		poll.Within(10*time.Second), poll.Every(time.Millisecond))
	a, err := e.svc.SendMessage(ctx, e.alice, id, service.Message{Content: "one"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.svc.SendMessage(ctx, e.alice, id, service.Message{Content: "two"})
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

func TestQueueOperations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	s := e.shared(service.NewSession{})
	a, b := queueWhileRunning(t, e, s.ID)

	wantCode(t, "viewer edits", e.svc.EditQueueItem(ctx, e.dave, s.ID, a, "x"), service.CodeForbidden)
	wantCode(t, "edit unknown", e.svc.EditQueueItem(ctx, e.alice, s.ID, "nope", "x"), service.CodeItemNotFound)
	wantCode(t, "edit empty", e.svc.EditQueueItem(ctx, e.alice, s.ID, a, ""), service.CodeBadRequest)
	if err := e.svc.EditQueueItem(ctx, e.carol, s.ID, a, "one, edited"); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.SteerQueueItem(ctx, e.carol, s.ID, b); err != nil {
		t.Fatal(err)
	}
	got, err := e.svc.GetSession(ctx, e.dave, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Queue.Queued) != 1 || got.Queue.Queued[0].Text() != "one, edited" || len(got.Queue.Steering) != 1 || got.Queue.Steering[0].ID != b {
		t.Fatalf("queue %+v", got.Queue)
	}
	if err := e.svc.RemoveQueueItem(ctx, e.alice, s.ID, a); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "remove again", e.svc.RemoveQueueItem(ctx, e.alice, s.ID, a), service.CodeItemNotFound)
	// Cancel keeping the inbox: the turn stops, nothing else is dropped.
	if err := e.svc.Cancel(ctx, e.carol, s.ID, true); err != nil {
		t.Fatal(err)
	}
	e.idle(s.ID)
	wantCode(t, "viewer cancels", e.svc.Cancel(ctx, e.dave, s.ID, false), service.CodeForbidden)
}

func TestApprovalAndAnswerErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	s := e.shared(service.NewSession{})
	if _, err := e.svc.SendMessage(ctx, e.alice, s.ID, service.Message{Content: "ask: tea?"}); err != nil {
		t.Fatal(err)
	}
	ag, _ := e.app.Manager.Lookup(s.ID)
	var q driver.Interaction
	poll.Eventually(t, "a question to be asked", func() bool {
		if in := ag.PendingInteractions(); len(in) > 0 {
			q = in[0]
			return true
		}
		return false
	}, poll.Within(10*time.Second))
	wantCode(t, "approve a question", e.svc.Approve(ctx, e.alice, s.ID, q.ID, service.DecisionAllow), service.CodeNotPending)
	wantCode(t, "no answers", e.svc.Answer(ctx, e.alice, s.ID, q.ID, nil), service.CodeBadAnswer)
	wantCode(t, "unknown option", e.svc.Answer(ctx, e.alice, s.ID, q.ID, []session.Answer{{ID: "q1", Selected: []string{"maybe"}}}), service.CodeBadAnswer)
	wantCode(t, "viewer answers", e.svc.Answer(ctx, e.dave, s.ID, q.ID, []session.Answer{{ID: "q1", Selected: []string{"yes"}}}), service.CodeForbidden)
	if err := e.svc.Answer(ctx, e.carol, s.ID, q.ID, []session.Answer{{ID: "q1", Selected: []string{"yes"}}}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "answer twice", e.svc.Answer(ctx, e.alice, s.ID, q.ID, []session.Answer{{ID: "q1", Selected: []string{"no"}}}), service.CodeNotPending)
	e.idle(s.ID)
}

func TestFork(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	src := e.shared(service.NewSession{Title: "source", Mode: session.ModeAuto})
	e.run(e.alice, src.ID, "first")
	e.run(e.alice, src.ID, "second")
	ag, _ := e.app.Manager.Lookup(src.ID)
	events := ag.Log().Events(0, ag.Log().Len())
	var firstEnd, inside int64 = -1, -1
	for _, ev := range events {
		if ev.Type == session.TypeTurnEnd && firstEnd < 0 {
			firstEnd = ev.Seq
		}
		if ev.Type == session.TypeAssistantMessage && inside < 0 {
			inside = ev.Seq
		}
	}

	child, err := e.svc.Fork(ctx, e.dave, src.ID, &firstEnd) // a viewer may fork
	if err != nil {
		t.Fatal(err)
	}
	if child.OwnerID != e.dave.UserID || child.ParentID != src.ID || child.ForkSeq == nil || *child.ForkSeq != firstEnd {
		t.Fatalf("child %+v fork seq %v", child.SessionRow, child.ForkSeq)
	}
	if child.Title != "source" || child.Mode != session.ModeAuto || child.Provider != "demo" {
		t.Fatalf("child did not inherit title, mode, route: %+v", child.SessionRow)
	}
	cag, _ := e.app.Manager.Lookup(child.ID)
	cev := cag.Log().Events(0, cag.Log().Len())
	// The seed, its end marker, then what the fork copied of the workspace.
	if int64(len(cev)) != firstEnd+3 || cev[firstEnd+1].Type != session.TypeEndSeed || cev[firstEnd+2].Type != session.TypeWorkspaceReady {
		t.Fatalf("child log has %d events ending %s, want the seed [0,%d], session/end-seed and workspace/ready", len(cev), cev[len(cev)-1].Type, firstEnd)
	}
	for i := range firstEnd + 1 {
		if !bytes.Equal(cev[i].Data, events[i].Data) || cev[i].Type != events[i].Type {
			t.Fatalf("seed event %d differs", i)
		}
	}
	row, err := e.app.Store.GetSession(ctx, child.ID)
	if err != nil {
		t.Fatal(err)
	}
	if row.SeedLength != firstEnd+1 || row.Workspace == "" || row.Workspace == ag.Workspace() {
		t.Fatalf("row seed length %d workspace %q", row.SeedLength, row.Workspace)
	}
	// The child runs on its own; the parent is untouched.
	before := ag.Log().Len()
	e.run(e.dave, child.ID, "third")
	if ag.Log().Len() != before {
		t.Fatal("running the fork changed the parent")
	}
	// Carol (collaborator on the parent) has no access to dave's fork.
	_, err = e.svc.GetSession(ctx, e.carol, child.ID)
	wantCode(t, "collaborator reads the fork", err, service.CodeNotFound)

	_, err = e.svc.Fork(ctx, e.alice, src.ID, &inside)
	wantCode(t, "fork inside a turn", err, service.CodeOpenTurn)
	beyond := int64(len(events) + 10)
	_, err = e.svc.Fork(ctx, e.alice, src.ID, &beyond)
	wantCode(t, "fork beyond the head", err, service.CodeBadRequest)
	_, err = e.svc.Fork(ctx, e.bob, src.ID, nil)
	wantCode(t, "other forks", err, service.CodeNotFound)
	_, err = e.svc.Fork(ctx, &auth.Actor{Via: auth.ViaShare, ShareSessionID: src.ID}, src.ID, nil)
	wantCode(t, "share link forks", err, service.CodeUnauthorized)

	// While a turn runs, forking the whole log is refused.
	if _, err := e.svc.SendMessage(ctx, e.alice, src.ID, service.Message{Content: "long: 3000"}); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "the turn to start", func() bool { return ag.Log().State().TurnOpen },
		poll.Within(10*time.Second), poll.Every(time.Millisecond))
	_, err = e.svc.Fork(ctx, e.alice, src.ID, nil)
	wantCode(t, "fork a running session", err, service.CodeOpenTurn)
	if err := e.svc.Cancel(ctx, e.alice, src.ID, false); err != nil {
		t.Fatal(err)
	}
	e.idle(src.ID)
	whole, err := e.svc.Fork(ctx, e.alice, src.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *whole.ForkSeq != ag.Log().Len()-1 {
		t.Fatalf("whole fork at %d, want %d", *whole.ForkSeq, ag.Log().Len()-1)
	}
}

func TestEventsAndExport(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	s := e.shared(service.NewSession{})
	e.run(e.alice, s.ID, "hello <b>&</b>")
	e.run(e.alice, s.ID, "long: 30")

	var buf bytes.Buffer
	if err := e.svc.Export(ctx, e.dave, s.ID, &buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	stored, err := e.app.Store.EventsRaw(ctx, s.ID, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != len(stored) {
		t.Fatalf("%d lines, %d stored events", len(lines), len(stored))
	}
	for i, r := range stored {
		if lines[i] != string(r.Body) {
			t.Fatalf("line %d differs from the stored event", i)
		}
	}
	// Events pages through the same bytes (live agent: from memory).
	page, err := e.svc.Events(ctx, e.dave, s.ID, 4, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 10 || page.Head != int64(len(stored)-1) || string(page.Events[0]) != string(stored[5].Body) {
		t.Fatalf("page of %d from %.60s, head %d", len(page.Events), page.Events[0], page.Head)
	}
	// A cold session is read from the store.
	if err := e.app.Manager.Remove(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	cold, err := e.svc.Events(ctx, e.alice, s.ID, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cold.Events) != len(stored) || string(cold.Events[len(stored)-1]) != string(stored[len(stored)-1].Body) {
		t.Fatalf("cold read: %d events", len(cold.Events))
	}

	var refused bytes.Buffer
	wantCode(t, "other exports", e.svc.Export(ctx, e.bob, s.ID, &refused), service.CodeNotFound)
	if refused.Len() != 0 {
		t.Fatal("a refused export wrote data")
	}
	_, err = e.svc.Events(ctx, e.alice, s.ID, -2, 0)
	wantCode(t, "since -2", err, service.CodeBadRequest)
	_, err = e.svc.Events(ctx, e.alice, s.ID, -1, service.MaxEventsLimit+1)
	wantCode(t, "huge limit", err, service.CodeBadRequest)
	var ev map[string]any
	if err := json.Unmarshal(cold.Events[0], &ev); err != nil {
		t.Fatal(err)
	}
}

func TestMembersAndShareLinks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	s := e.shared(service.NewSession{})
	ms, err := e.svc.Members(ctx, e.alice, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 {
		t.Fatalf("members %+v", ms)
	}
	_, err = e.svc.Members(ctx, e.carol, s.ID)
	wantCode(t, "collaborator lists members", err, service.CodeForbidden)
	wantCode(t, "unknown user", e.svc.AddMember(ctx, e.alice, s.ID, "nobody", auth.SessionRoleViewer), service.CodeNotFound)
	wantCode(t, "bad role", e.svc.AddMember(ctx, e.alice, s.ID, "bob", "owner"), service.CodeBadRequest)
	wantCode(t, "owner as member", e.svc.AddMember(ctx, e.alice, s.ID, "alice", auth.SessionRoleViewer), service.CodeBadRequest)
	if err := e.svc.RemoveMember(ctx, e.root, s.ID, "dave"); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetSession(ctx, e.dave, s.ID)
	wantCode(t, "removed member reads", err, service.CodeNotFound)

	past := time.Now().Add(-time.Hour)
	_, err = e.svc.CreateShareLink(ctx, e.alice, s.ID, &past)
	wantCode(t, "expired link", err, service.CodeBadRequest)
	l, err := e.svc.CreateShareLink(ctx, e.alice, s.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Token == "" || l.Path != "/s/"+l.Token || l.ID == "" || l.CreatedBy != e.alice.UserID {
		t.Fatalf("link %+v", l)
	}
	ls, err := e.svc.ShareLinks(ctx, e.alice, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(ls); len(ls) != 1 || strings.Contains(string(b), l.Token) {
		t.Fatalf("links %s", b)
	}
	guest, err := e.app.Auth.ShareActor(ctx, l.Token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.GetSession(ctx, guest, s.ID); err != nil {
		t.Fatalf("share link reads: %v", err)
	}
	wantCode(t, "collaborator revokes", e.svc.RevokeShareLink(ctx, e.carol, s.ID, l.ID), service.CodeForbidden)
	if err := e.svc.RevokeShareLink(ctx, e.alice, s.ID, l.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetSession(ctx, guest, s.ID)
	wantCode(t, "revoked link reads", err, service.CodeUnauthorized)
	wantCode(t, "revoke again", e.svc.RevokeShareLink(ctx, e.alice, s.ID, l.ID), service.CodeNotFound)
}

func TestProviders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p, err := e.svc.Providers(t.Context(), e.bob)
	if err != nil {
		t.Fatal(err)
	}
	if p.Default.Provider != "demo" || len(p.Providers) != 1 || !p.Providers[0].Offline || !strings.Contains(strings.ToLower(p.Providers[0].Label), "offline") {
		t.Fatalf("providers %+v", p)
	}
	_, err = e.svc.Providers(t.Context(), nil)
	wantCode(t, "anonymous", err, service.CodeUnauthorized)
}

func TestErrorMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err    error
		code   service.Code
		status int
	}{
		{auth.ErrUnauthenticated, service.CodeUnauthorized, http.StatusUnauthorized},
		{fmt.Errorf("x: %w", auth.ErrForbidden), service.CodeForbidden, http.StatusForbidden},
		{auth.ErrNotFound, service.CodeNotFound, http.StatusNotFound},
		{models.ErrNotFound, service.CodeNotFound, http.StatusNotFound},
		{&auth.InputError{Reason: "bad name"}, service.CodeBadRequest, http.StatusBadRequest},
		{driver.ErrItemNotFound, service.CodeItemNotFound, http.StatusNotFound},
		{driver.ErrNotPending, service.CodeNotPending, http.StatusConflict},
		{driver.ErrBadAnswer, service.CodeBadAnswer, http.StatusBadRequest},
		{driver.ErrBusy, service.CodeBusy, http.StatusConflict},
		{driver.ErrDisposed, service.CodeUnavailable, http.StatusServiceUnavailable},
		{&session.Error{Code: session.CodeOpenTurn}, service.CodeOpenTurn, http.StatusConflict},
		{service.Errorf(service.CodeTooLarge, "big"), service.CodeTooLarge, http.StatusRequestEntityTooLarge},
		{errors.New("disk on fire /secret/path"), service.CodeInternal, http.StatusInternalServerError},
		{&fs.PathError{Op: "mkdir", Path: "/data/x", Err: syscall.ENOSPC}, service.CodeInsufficientStorage, http.StatusInsufficientStorage},
		{fmt.Errorf("store: %w", sqlite3.Error{Code: sqlite3.ErrFull}), service.CodeInsufficientStorage, http.StatusInsufficientStorage},
		{fmt.Errorf("store: %w", sqlite3.Error{Code: sqlite3.ErrIoErr, SystemErrno: syscall.ENOSPC}), service.CodeInsufficientStorage, http.StatusInsufficientStorage},
		{sqlite3.Error{Code: sqlite3.ErrIoErr}, service.CodeInternal, http.StatusInternalServerError},
	}
	for _, tt := range tests {
		e := service.AsError(tt.err)
		if e.Code != tt.code || e.Code.HTTPStatus() != tt.status {
			t.Errorf("%v: %s/%d, want %s/%d", tt.err, e.Code, e.Code.HTTPStatus(), tt.code, tt.status)
		}
		if e.Code == service.CodeInternal && strings.Contains(e.Message, "secret") {
			t.Errorf("internal error leaks its cause: %q", e.Message)
		}
	}
}

// A refusal says whether anything was kept: a send taken back kept
// nothing; a repeat of a kept send while the store takes no writes was
// kept (its key names it), so it must not say nothing was.
func TestStoreRefusalsSayWhatWasKept(t *testing.T) {
	t.Parallel()
	locked := fmt.Errorf("%w: begin: %w", models.ErrNotWritable, sqlite3.Error{Code: sqlite3.ErrBusy})
	tests := []struct {
		err  error
		kept bool
	}{
		{locked, false},
		{fmt.Errorf("%w: %w", driver.ErrNotStored, fmt.Errorf("%w: write events: %w", driver.ErrNotDurable, sqlite3.Error{Code: sqlite3.ErrBusy})), false},
		{fmt.Errorf("%w: %w", driver.ErrNotDurable, locked), true},
	}
	for _, tt := range tests {
		e := service.AsError(tt.err)
		if e.Code != service.CodeUnavailable {
			t.Errorf("%v: code %s, want unavailable", tt.err, e.Code)
		}
		if !strings.Contains(e.Message, "another process holds its write lock") {
			t.Errorf("%v: %q does not say the database is locked", tt.err, e.Message)
		}
		if nothing := strings.Contains(e.Message, "nothing was kept"); nothing == tt.kept || strings.Contains(e.Message, "applied once") != tt.kept {
			t.Errorf("%v: %q; kept: %v", tt.err, e.Message, tt.kept)
		}
	}
}
