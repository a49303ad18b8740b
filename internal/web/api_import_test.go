package web_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"harness/client"
	"harness/internal/importer"
)

const corpusDir = "/work/shared/corpus/dsh-sessions"

func corpusBytes(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpusDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// zeros is an endless stream of spaces.
type spaces struct{}

func (spaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// POST /api/sessions/import through the Go client: the caller owns the
// session, others do not see it, it continues; refusals name the line; a
// body over the cap is 413.
func TestRESTImport(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	ctx := t.Context()
	s, err := e.alice.Import(ctx, bytes.NewReader(corpusBytes(t, "examples--acp-agent--parallel-tool-calls--session.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	if s.Role != "owner" || s.Title != "Use the read tool twice" {
		t.Fatalf("imported %+v", s)
	}
	_, err = e.bob.GetSession(ctx, s.ID)
	wantErr(t, "bob reads", err, 404, "not_found")
	list, err := e.alice.ListSessions(ctx, client.ListOptions{})
	if err != nil || len(list.Sessions) != 1 || list.Sessions[0].ID != s.ID {
		t.Fatalf("alice's list %+v %v", list, err)
	}

	// The log is the converted one (the chat page is checked in
	// TestPageImport, which signs in like a browser).
	page, err := e.alice.Events(ctx, s.ID, -1, 0)
	if err != nil || page.Head != 32 || page.Events[32].Type != "session/end-seed" {
		t.Fatalf("events: head %d, %v", page.Head, err)
	}

	// It continues.
	if _, err := e.alice.SendMessage(ctx, s.ID, "and now?", "followup"); err != nil {
		t.Fatal(err)
	}
	e.idle(t, s.ID)
	ev, err := e.alice.Events(ctx, s.ID, 32, 0)
	if err != nil || len(ev.Events) == 0 {
		t.Fatalf("after the followup: %v", err)
	}
	if last := ev.Events[len(ev.Events)-1]; last.Type != "turn/end" || !strings.Contains(string(last.Data), `"turn":2`) {
		t.Fatalf("after the followup the log ends with %s %s", last.Type, last.Data)
	}

	// Refusals.
	_, err = e.alice.Import(ctx, bytes.NewReader(corpusBytes(t, "apps--web--cordis-tool-round--session.jsonl")))
	wantErr(t, "seq gap", err, 400, "bad_request")
	if ce, ok := err.(*client.Error); !ok || ce.Message != "line 8: seq gap: expected seq 6, got 87" {
		t.Fatalf("message %v", err)
	}
	_, err = e.alice.Import(ctx, strings.NewReader(`{"type":"session","version":1,"id":"x","createdAt":1}`))
	wantErr(t, "version", err, 400, "bad_request")
	_, err = e.alice.Import(ctx, io.LimitReader(spaces{}, importer.MaxBytes+1))
	wantErr(t, "over the cap, streamed", err, 413, "too_large")
	status, body := e.raw(t, "POST", "/api/sessions/import", "application/x-ndjson", bytes.NewReader(make([]byte, importer.MaxBytes+10)))
	if status != 413 || !strings.Contains(body, "too_large") {
		t.Fatalf("over the cap with a length: %d %.200s", status, body)
	}
	if list, _ := e.alice.ListSessions(ctx, client.ListOptions{}); len(list.Sessions) != 1 {
		t.Fatalf("refused imports left %d sessions", len(list.Sessions)-1)
	}
}

// upload posts a file to the Import control as a browser without script.
func (u *user) upload(name string, content []byte, csrf string) (*http.Response, string) {
	u.e.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	if csrf != "" {
		_ = w.WriteField("_csrf", csrf)
	}
	fw, err := w.CreateFormFile("file", name)
	if err != nil {
		u.e.t.Fatal(err)
	}
	fw.Write(content)
	w.Close()
	res, err := u.c.Post(u.e.app.URL+"/sessions/import", w.FormDataContentType(), &body)
	if err != nil {
		u.e.t.Fatal(err)
	}
	defer res.Body.Close()
	page, _ := io.ReadAll(res.Body)
	return res, string(page)
}

// The Import control on the sessions page works without script: the new
// session opens, a refused log comes back with the reason, the CSRF token
// is required.
func TestPageImport(t *testing.T) {
	t.Parallel()
	e := newPageEnv(t)
	bob := e.login("bob", "bob-password")
	_, list := bob.get("/")
	if !strings.Contains(list, `action="/sessions/import"`) || !strings.Contains(list, `enctype="multipart/form-data"`) {
		t.Fatal("no Import control on the sessions page")
	}

	res, _ := bob.upload("bash.jsonl", corpusBytes(t, "examples--acp-agent--bash-tool-turn--session.jsonl"), bob.csrf)
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/sessions/") {
		t.Fatalf("import: %d %s", res.StatusCode, loc)
	}
	id := strings.TrimPrefix(loc, "/sessions/")
	_, chat := bob.get(loc)
	if !strings.Contains(chat, "Use the bash tool to run exactly") || !strings.Contains(chat, `data-tool="bash"`) {
		t.Fatalf("chat page %.300s", chat)
	}
	// The composer continues it.
	res, _ = bob.form("/sessions/"+id+"/messages", url.Values{"content": {"thanks"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("send: %d", res.StatusCode)
	}
	e.idle(id)
	_, chat = bob.get(loc)
	if !strings.Contains(chat, ">thanks<") {
		t.Fatalf("the followup is not in the transcript")
	}

	// A refused log re-shows the sessions page with the reason, in place:
	// the reason is the server's, so it never travels in a URL.
	res, page := bob.upload("gap.jsonl", corpusBytes(t, "apps--web--cordis-tool-round--session.jsonl"), bob.csrf)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(page, "Import failed: line 8: seq gap: expected seq 6, got 87") {
		t.Fatalf("refused import: %d; the sessions page does not say why: %.300s", res.StatusCode, page)
	}
	if res, page = bob.upload("none.jsonl", nil, bob.csrf); res.StatusCode != http.StatusBadRequest || !strings.Contains(page, "Import failed") {
		t.Fatalf("empty upload: %d %.300s", res.StatusCode, page)
	}
	if res, _ = bob.upload("bash.jsonl", corpusBytes(t, "examples--acp-agent--bash-tool-turn--session.jsonl"), ""); res.StatusCode != http.StatusForbidden {
		t.Fatalf("no CSRF token: %d", res.StatusCode)
	}
	_, page = bob.get("/")
	if n := strings.Count(page, `class="session-row"`); n != 1 {
		t.Fatalf("%d sessions listed, want the one import", n)
	}
}
