package service_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"harness/internal/auth"
	"harness/internal/models"
	"harness/internal/render"
	"harness/internal/service"
	"harness/internal/session"
)

const corpusDir = "/work/shared/corpus/dsh-sessions"

func readCorpusFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpusDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// storedEvents reads a session's whole log from the store.
func (e *env) storedEvents(id string) []session.Event {
	e.t.Helper()
	if err := e.app.Store.W.Flush(e.t.Context(), id); err != nil {
		e.t.Fatal(err)
	}
	evs, err := e.app.Store.EventsSince(e.t.Context(), id, -1, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return evs
}

// A DeepSeek Harness log imported by alice: hers alone, its transcript
// folds like a native one, and it continues on the demo model.
func TestImportDSH(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	s, err := e.svc.Import(ctx, e.alice, bytes.NewReader(readCorpusFile(t, "examples--acp-agent--bash-tool-turn--session.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	if s.OwnerID != e.alice.UserID || s.Role != auth.SessionRoleOwner || s.Title != "Use the bash tool to" || s.Mode != session.ModeAsk {
		t.Fatalf("session %+v", s.SessionRow)
	}
	if s.Provider != "demo" || s.Workspace.Kind != "fresh" {
		t.Fatalf("route %s/%s workspace %+v: want the default route (no deepseek route here) and a fresh workspace", s.Provider, s.Model, s.Workspace)
	}
	if fi, err := os.Stat(s.Workspace.Path); err != nil || !fi.IsDir() {
		t.Fatalf("workspace %s: %v", s.Workspace.Path, err)
	}
	wantCode(t, "bob reads", func() error { _, err := e.svc.GetSession(ctx, e.bob, s.ID); return err }(), service.CodeNotFound)
	wantCode(t, "anonymous imports", func() error { _, err := e.svc.Import(ctx, nil, strings.NewReader("{}")); return err }(), service.CodeUnauthorized)

	// Stored: the 102 converted events and the end-seed marker.
	events := e.storedEvents(s.ID)
	if len(events) != 103 || events[102].Type != session.TypeEndSeed {
		t.Fatalf("%d events, last %s", len(events), events[len(events)-1].Type)
	}
	row, err := e.app.Store.GetSession(ctx, s.ID)
	if err != nil || row.SeedLength != 102 || row.Head != 102 {
		t.Fatalf("row %+v %v", row, err)
	}

	// The transcript folds like a native one: the prompt, reasoning, the
	// bash card with its result, the answer.
	tr := render.NewMarkdown().Fold(events, render.FoldOptions{ViewerID: e.alice.UserID})
	var kinds []string
	for _, it := range tr.Items {
		switch v := it.(type) {
		case *render.UserItem:
			kinds = append(kinds, "user")
			if !strings.HasPrefix(v.Text, "Use the bash tool") || v.ShowAuthor && v.Author != "" {
				t.Errorf("user item %+v", v)
			}
		case *render.ToolItem:
			kinds = append(kinds, "tool:"+v.Name)
		case *render.TextItem:
			kinds = append(kinds, "text")
		case *render.ReasoningItem:
			kinds = append(kinds, "reasoning")
		}
	}
	if want := []string{"user", "reasoning", "tool:bash", "reasoning", "text"}; !slices.Equal(kinds, want) {
		t.Fatalf("transcript %v, want %v", kinds, want)
	}

	// It continues: a new turn runs on the demo model.
	e.run(e.alice, s.ID, "what did the command print?")
	events = e.storedEvents(s.ID)
	var ends []session.TurnEnd
	var last session.AssistantMessage
	for _, ev := range events[103:] {
		switch ev.Type {
		case session.TypeTurnEnd:
			te, _ := session.Decode[session.TurnEnd](ev)
			ends = append(ends, te)
		case session.TypeAssistantMessage:
			last, _ = session.Decode[session.AssistantMessage](ev)
		}
	}
	if len(ends) != 1 || ends[0].Turn != 2 || ends[0].Reason.Kind != session.ReasonCompleted || last.Message.Source.Provider != "demo" || last.Message.Text() == "" {
		t.Fatalf("new turn %+v, answer %+v", ends, last.Message)
	}
	if got, _ := e.svc.GetSession(ctx, e.alice, s.ID); got.Title != "Use the bash tool to" {
		t.Fatalf("the followup retitled the import: %q", got.Title)
	}
}

// What an import decides itself is logged after the end-seed marker: the
// title of an untitled log, a mode other than ask.
func TestImportDecisions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	// No title event: the first words of the first prompt.
	s, err := e.svc.Import(ctx, e.alice, bytes.NewReader(readCorpusFile(t, "apps--web--message-feedback-protocol--session.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	evs := e.storedEvents(s.ID)
	if s.Title != "Give one useful answer." || evs[len(evs)-1].Type != session.TypeSessionTitle {
		t.Fatalf("title %q, last event %s", s.Title, evs[len(evs)-1].Type)
	}
	// A read-only sandbox in the log: the session is read-only.
	s, err = e.svc.Import(ctx, e.alice, bytes.NewReader(readCorpusFile(t, "examples--acp-agent--subagent-continuable-inheritance--session.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	evs = e.storedEvents(s.ID)
	if s.Mode != session.ModeReadOnly || evs[len(evs)-1].Type != session.TypePermissionMode || evs[len(evs)-2].Type != session.TypeEndSeed {
		t.Fatalf("mode %s, events end %v", s.Mode, types(evs[len(evs)-2:]))
	}
	// A subagent's log: its parent's "never" approval policy does not
	// follow it; the new owner is asked.
	s, err = e.svc.Import(ctx, e.alice, bytes.NewReader(readCorpusFile(t, "examples--acp-agent--advanced-toolchain--session.1.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	evs = e.storedEvents(s.ID)
	if last := evs[len(evs)-1]; last.Type != session.TypeApprovalPolicy || string(last.Data) != `{"policy":"ask"}` {
		t.Fatalf("last event %s %s", last.Type, last.Data)
	}
	// An empty log: an empty, continuable session.
	s, err = e.svc.Import(ctx, e.alice, bytes.NewReader(readCorpusFile(t, "examples--acp-agent--handshake--session.jsonl")))
	if err != nil || s.Title != service.DefaultImportTitle {
		t.Fatalf("empty import %+v %v", s.SessionRow, err)
	}
	e.run(e.alice, s.ID, "hello")
	if evs := e.storedEvents(s.ID); len(evs) < 6 || evs[0].Type != session.TypeEndSeed || evs[len(evs)-1].Type != session.TypeTurnEnd {
		t.Fatalf("stored after the first turn: %v", types(evs))
	}
}

func types(evs []session.Event) []session.Type {
	out := make([]session.Type, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// A failing import leaves no row, no events and no workspace: refused
// input before anything is made, and failures after the workspace, after
// the row.
func TestImportFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	root := e.app.Workspaces.FreshRoot()
	entries := func() int {
		des, err := os.ReadDir(root)
		if err != nil {
			t.Fatal(err)
		}
		return len(des)
	}
	count := func() int {
		var n int64
		if err := e.app.DB.R.Model(&models.Session{}).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		return int(n)
	}
	dirs, rows := entries(), count()

	_, err := e.svc.Import(ctx, e.alice, bytes.NewReader(readCorpusFile(t, "apps--web--cordis-tool-round--session.jsonl")))
	wantCode(t, "seq gap", err, service.CodeBadRequest)
	if err == nil || !strings.Contains(err.Error(), "line 8: seq gap") {
		t.Fatalf("error %v, want the line", err)
	}

	for _, stage := range []string{"begun", "seeded", "stored", "loaded"} {
		var id string
		service.SetImportFault(e.svc, func(sid, at string) error {
			if at == stage {
				id = sid
				return errors.New("injected " + stage)
			}
			return nil
		})
		_, err := e.svc.Import(ctx, e.alice, bytes.NewReader(readCorpusFile(t, "examples--acp-agent--parallel-tool-calls--session.jsonl")))
		service.SetImportFault(e.svc, nil)
		wantCode(t, "fault "+stage, err, service.CodeInternal)
		if id == "" {
			t.Fatalf("stage %s never ran", stage)
		}
		if _, err := e.app.Store.GetSession(ctx, id); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("%s: the row remains: %v", stage, err)
		}
		if evs, err := e.app.Store.EventsSince(ctx, id, -1, 0); err != nil || len(evs) != 0 {
			t.Fatalf("%s: %d events remain (%v)", stage, len(evs), err)
		}
		if _, ok := e.app.Manager.Lookup(id); ok {
			t.Fatalf("%s: the agent remains", stage)
		}
		if _, err := os.Stat(filepath.Join(root, id)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: the workspace remains: %v", stage, err)
		}
	}
	if entries() != dirs || count() != rows {
		t.Fatalf("workspaces %d → %d, rows %d → %d", dirs, entries(), rows, count())
	}
	if des, err := os.ReadDir(filepath.Join(filepath.Dir(root), "imports")); err != nil || len(des) != 0 {
		t.Fatalf("the import journal holds %v (%v), want nothing", des, err)
	}
	list, err := e.svc.ListSessions(ctx, e.alice, service.ListQuery{})
	if err != nil || len(list.Sessions) != 0 {
		t.Fatalf("alice lists %d sessions (%v)", len(list.Sessions), err)
	}
}

// Export then import of a native session (tool calls, an approval, a
// compaction) gives the same events, byte for byte; the import adds only
// its session/end-seed marker.
func TestImportExportRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	s := e.shared(service.NewSession{Mode: session.ModeAsk})
	if _, err := e.svc.SendMessage(ctx, e.alice, s.ID, service.Message{Content: "write: notes.txt\nhello <world> & co"}); err != nil {
		t.Fatal(err)
	}
	in := e.pendingApproval(s.ID)
	if err := e.svc.Approve(ctx, e.alice, s.ID, in.ID, service.DecisionAllow); err != nil {
		t.Fatal(err)
	}
	e.idle(s.ID)
	for _, p := range []string{"long: 400", "long: 300", "third question"} {
		e.run(e.alice, s.ID, p)
	}
	if res, err := e.svc.Compact(ctx, e.alice, s.ID); err != nil || !res.Compacted {
		t.Fatalf("compact %+v %v", res, err)
	}
	e.run(e.alice, s.ID, "after the compaction")

	var export bytes.Buffer
	if err := e.svc.Export(ctx, e.alice, s.ID, &export); err != nil {
		t.Fatal(err)
	}
	src := e.storedEvents(s.ID)
	have := map[session.Type]bool{}
	for _, ev := range src {
		have[ev.Type] = true
	}
	for _, typ := range []session.Type{session.TypeToolCall, session.TypeToolResult, session.TypeApprovalAsked, session.TypeApprovalDecided, session.TypeCompactionSum} {
		if !have[typ] {
			t.Fatalf("the native session has no %s", typ)
		}
	}

	imp, err := e.svc.Import(ctx, e.bob, bytes.NewReader(export.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if imp.OwnerID != e.bob.UserID || imp.Title == "" {
		t.Fatalf("import %+v", imp.SessionRow)
	}
	got := e.storedEvents(imp.ID)
	if len(got) != len(src)+1 || got[len(src)].Type != session.TypeEndSeed {
		t.Fatalf("%d events (want %d + end-seed), last %s", len(got), len(src), got[len(got)-1].Type)
	}
	for i, ev := range src {
		a, _ := session.MarshalEvent(ev)
		b, _ := session.MarshalEvent(got[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("seq %d differs:\nexported %s\nimported %s", i, a, b)
		}
	}
	// The import continues too.
	e.run(e.bob, imp.ID, "one more")
}

// Every corpus log that imports loads, folds into a transcript and runs a
// new turn on the demo model.
func TestImportCorpusContinues(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a turn per corpus file; skipped with -short")
	}
	t.Parallel()
	e := newEnv(t)
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("corpus: %v", err)
	}
	md := render.NewMarkdown()
	imported := 0
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s, err := e.svc.Import(t.Context(), e.alice, bytes.NewReader(b))
		if err != nil {
			if code(err) != service.CodeBadRequest {
				t.Errorf("%s: %v", filepath.Base(path), err)
			}
			continue // invalid upstream: see the importer's corpus table
		}
		imported++
		before := len(e.storedEvents(s.ID))
		md.Fold(e.storedEvents(s.ID), render.FoldOptions{ViewerID: e.alice.UserID})
		e.run(e.alice, s.ID, "one more thing")
		evs := e.storedEvents(s.ID)
		last, err := session.Decode[session.TurnEnd](evs[len(evs)-1])
		if err != nil || evs[len(evs)-1].Type != session.TypeTurnEnd || last.Reason.Kind != session.ReasonCompleted || len(evs) <= before {
			t.Errorf("%s: the new turn ended %s %+v", filepath.Base(path), evs[len(evs)-1].Type, last.Reason)
		}
	}
	if imported < 70 {
		t.Fatalf("%d corpus files imported", imported)
	}
}

// An import checks that the stored session loads, but does not keep it
// loaded: a large log would stay in memory until the idle unload. Opening
// it loads it.
func TestImportLeavesSessionUnloaded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s, err := e.svc.Import(t.Context(), e.alice, bytes.NewReader(readCorpusFile(t, "examples--headless-agent--advanced-toolchain--session.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	if _, live := e.app.Manager.Lookup(s.ID); live {
		t.Fatal("the imported session stayed loaded")
	}
	if got, err := e.svc.GetSession(t.Context(), e.alice, s.ID); err != nil || got.Title != s.Title {
		t.Fatalf("open the import: %+v %v", got, err)
	}
	if _, live := e.app.Manager.Lookup(s.ID); !live {
		t.Fatal("opening the import did not load it")
	}
}
