package web_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"harness/client"
	"harness/internal/app"
	"harness/internal/llm/fake"
	"harness/internal/models"
	"harness/internal/testkit/apptest"
	"harness/internal/testkit/poll"
)

// apiEnv is the real server (internal/app) on loopback with the demo model.
type apiEnv struct {
	app        *apptest.App
	alice, bob *client.Client
	aliceTok   string
}

func newAPIEnv(t *testing.T) *apiEnv {
	t.Helper()
	a := apptest.StartApp(t, nil, app.Options{
		DemoOptions:    []fake.Option{fake.WithChunkDelay(time.Millisecond)},
		VerifyRequests: true,
	})
	alice, bob := a.User(t, "alice", false), a.User(t, "bob", false)
	return &apiEnv{app: a, alice: alice.Client, bob: bob.Client, aliceTok: alice.Token}
}

func (e *apiEnv) idle(t *testing.T, id string) {
	t.Helper()
	e.app.WaitIdle(t, id)
}

func wantErr(t *testing.T, what string, err error, status int, code string) {
	t.Helper()
	var ce *client.Error
	if !asClientErr(err, &ce) || ce.Status != status || ce.Code != code {
		t.Errorf("%s: %v, want %d %s", what, err, status, code)
	}
}

func asClientErr(err error, target **client.Error) bool {
	if err == nil {
		return false
	}
	e, ok := err.(*client.Error)
	if ok {
		*target = e
	}
	return ok
}

// The REST routes' happy paths, through the Go client.
func TestRESTRoutes(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	ctx := t.Context()
	c := e.alice

	p, err := c.Providers(ctx)
	if err != nil || p.Default.Provider != "demo" || !p.Providers[0].Offline {
		t.Fatalf("providers %+v, %v", p, err)
	}
	s, err := c.CreateSession(ctx, client.NewSession{Title: "api", Mode: "ask"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Title != "api" || s.Role != "owner" || s.Mode != "ask" {
		t.Fatalf("created %+v", s.SessionRow)
	}
	list, err := c.ListSessions(ctx, client.ListOptions{Q: "api"})
	if err != nil || len(list.Sessions) != 1 || list.Sessions[0].ID != s.ID {
		t.Fatalf("list %+v, %v", list, err)
	}

	// A question, answered over REST.
	if _, err := c.SendMessage(ctx, s.ID, "ask: tea?", "followup"); err != nil {
		t.Fatal(err)
	}
	q := waitInteraction(t, c, s.ID)
	if err := c.Answer(ctx, s.ID, q.ID, []client.Answer{{ID: "q1", Selected: []string{"yes"}}}); err != nil {
		t.Fatal(err)
	}
	e.idle(t, s.ID)
	// An approval, denied over REST.
	if _, err := c.SendMessage(ctx, s.ID, "run: echo hi", "followup"); err != nil {
		t.Fatal(err)
	}
	a := waitInteraction(t, c, s.ID)
	if a.Kind != "approval" || a.ToolName != "bash" {
		t.Fatalf("interaction %+v", a)
	}
	if err := c.Approve(ctx, s.ID, a.ID, false); err != nil {
		t.Fatal(err)
	}
	e.idle(t, s.ID)

	// Queue while running, edit, steer, remove, cancel.
	if _, err := c.SendMessage(ctx, s.ID, "long: 3000", "followup"); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, c, s.ID)
	m1, err := c.SendMessage(ctx, s.ID, "one", "followup")
	if err != nil {
		t.Fatal(err)
	}
	m2, err := c.SendMessage(ctx, s.ID, "two", "followup")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EditQueueItem(ctx, s.ID, m1, "one!"); err != nil {
		t.Fatal(err)
	}
	if err := c.SteerQueueItem(ctx, s.ID, m1); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveQueueItem(ctx, s.ID, m2); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetSession(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Queue.Steering) != 1 || got.Queue.Steering[0].Text() != "one!" || len(got.Queue.Queued) != 0 {
		t.Fatalf("queue %+v", got.Queue)
	}
	if err := c.Cancel(ctx, s.ID, false); err != nil {
		t.Fatal(err)
	}
	e.idle(t, s.ID)

	// Patch, events, export.
	title, yes := "renamed", true
	got, err = c.UpdateSession(ctx, s.ID, client.Patch{Title: &title, Archived: &yes})
	if err != nil || got.Title != title || !got.Archived {
		t.Fatalf("patch: %+v, %v", got.SessionRow, err)
	}
	page, err := c.Events(ctx, s.ID, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if page.Head != int64(len(page.Events)-1) || page.Events[0].Seq != 0 {
		t.Fatalf("events: %d, head %d", len(page.Events), page.Head)
	}
	var buf bytes.Buffer
	if err := c.Export(ctx, s.ID, &buf); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 16<<20)
	n := 0
	for ; sc.Scan(); n++ {
		var ev client.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Seq != int64(n) || ev.Type != page.Events[n].Type {
			t.Fatalf("export line %d: %.80s (%v)", n, sc.Text(), err)
		}
	}
	if n != len(page.Events) {
		t.Fatalf("export has %d lines, the log %d events", n, len(page.Events))
	}

	// Members and share links.
	if err := c.AddMember(ctx, s.ID, "bob", "viewer"); err != nil {
		t.Fatal(err)
	}
	ms, err := c.Members(ctx, s.ID)
	if err != nil || len(ms) != 1 || ms[0].Name != "bob" || ms[0].Role != "viewer" {
		t.Fatalf("members %+v, %v", ms, err)
	}
	if _, err := e.bob.GetSession(ctx, s.ID); err != nil {
		t.Fatalf("member reads: %v", err)
	}
	if err := c.RemoveMember(ctx, s.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour)
	link, err := c.CreateShareLink(ctx, s.ID, &exp)
	if err != nil || link.Token == "" || link.ExpiresAt == nil {
		t.Fatalf("link %+v, %v", link, err)
	}
	ls, err := c.ShareLinks(ctx, s.ID)
	if err != nil || len(ls) != 1 {
		t.Fatalf("links %+v, %v", ls, err)
	}
	if err := c.RevokeShareLink(ctx, s.ID, link.ID); err != nil {
		t.Fatal(err)
	}

	// Fork at the first completed turn; a point inside a turn is refused.
	var firstEnd, inside int64 = -1, -1
	for _, ev := range page.Events {
		if ev.Type == "turn/end" && firstEnd < 0 {
			firstEnd = ev.Seq
		}
		if ev.Type == "step/start" && inside < 0 {
			inside = ev.Seq
		}
	}
	child, err := e.bob.Fork(ctx, s.ID, &firstEnd)
	wantErr(t, "fork by a stranger", err, 404, "not_found")
	child, err = c.Fork(ctx, s.ID, &firstEnd)
	if err != nil || child.ParentID != s.ID || *child.ForkSeq != firstEnd {
		t.Fatalf("fork %+v, %v", child.SessionRow, err)
	}
	_, err = c.Fork(ctx, s.ID, &inside)
	wantErr(t, "fork inside a turn", err, 409, "open_turn")

	// Delete removes the session, its events and its workspace.
	ws := filepath.Join(e.app.WorkspaceRoot(), s.ID)
	if _, err := os.Stat(ws); err != nil {
		t.Fatal(err)
	}
	var key int64
	if err := e.app.DB.R.Model(&models.Session{}).Where("id = ?", s.ID).Select("log_key").Scan(&key).Error; err != nil || key == 0 {
		t.Fatalf("log key %d: %v", key, err)
	}
	if err := c.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetSession(ctx, s.ID)
	wantErr(t, "get deleted", err, 404, "not_found")
	var events int64
	if err := e.app.DB.R.Model(&models.LogRow{}).Where("log_key = ?", key).Count(&events).Error; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) || events != 0 {
		t.Fatalf("after delete: workspace %v, %d events", err, events)
	}
	if _, err := c.GetSession(ctx, child.ID); err != nil {
		t.Fatalf("the fork should outlive its parent: %v", err)
	}
}

func waitInteraction(t *testing.T, c *client.Client, id string) client.Interaction {
	t.Helper()
	var in client.Interaction
	poll.Eventually(t, "an interaction", func() bool {
		s, err := c.GetSession(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Interactions) > 0 {
			in = s.Interactions[0]
			return true
		}
		return false
	})
	return in
}

func waitRunning(t *testing.T, c *client.Client, id string) {
	t.Helper()
	poll.Eventually(t, "the session to run its prompt", func() bool {
		s, err := c.GetSession(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return s.Status == client.StatusRunning && len(s.Queue.Queued) == 0
	}, poll.Every(2*time.Millisecond))
}

// raw sends a request as alice (token) and returns status and body.
func (e *apiEnv) raw(t *testing.T, method, path, ctype string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.app.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.aliceTok)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// Bad requests get a status and a JSON {"error": {code, message}}.
func TestRESTErrors(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	s, err := e.alice.CreateSession(t.Context(), client.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	base := "/api/sessions/" + s.ID
	tests := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"malformed JSON", "POST", "/api/sessions", `{"title":`, 400, "bad_request"},
		{"unknown field", "POST", "/api/sessions", `{"titel":"x"}`, 400, "bad_request"},
		{"wrong type", "POST", base + "/messages", `{"content":5}`, 400, "bad_request"},
		{"no body", "POST", base + "/messages", ``, 400, "bad_request"},
		{"empty message", "POST", base + "/messages", `{"content":""}`, 400, "bad_request"},
		{"huge message", "POST", base + "/messages", `{"content":"` + strings.Repeat("x", 300<<10) + `"}`, 413, "too_large"},
		{"huge body", "POST", base + "/messages", `{"content":"` + strings.Repeat("x", 2<<20) + `"}`, 413, "too_large"},
		{"bad archived", "GET", "/api/sessions?archived=maybe", ``, 400, "bad_request"},
		{"bad since", "GET", base + "/events?since=x", ``, 400, "bad_request"},
		{"bad limit", "GET", base + "/events?limit=999999", ``, 400, "bad_request"},
		{"unknown session", "GET", "/api/sessions/nope", ``, 404, "not_found"},
		{"bad decision", "POST", base + "/approvals/a", `{"decision":"maybe"}`, 400, "bad_request"},
		{"bad member role", "POST", base + "/members", `{"name":"bob","role":"owner"}`, 400, "bad_request"},
		{"unknown member", "POST", base + "/members", `{"name":"nobody","role":"viewer"}`, 404, "not_found"},
		{"nothing to patch", "PATCH", base, `{}`, 400, "bad_request"},
		{"bad fork point", "POST", base + "/fork", `{"atSeq":-3}`, 400, "bad_request"},
	}
	for _, tt := range tests {
		var body io.Reader
		if tt.body != "" {
			body = strings.NewReader(tt.body)
		}
		status, got := e.raw(t, tt.method, tt.path, "application/json", body)
		var eb struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal([]byte(got), &eb)
		if status != tt.status || eb.Error.Code != tt.code || eb.Error.Message == "" {
			t.Errorf("%s: %d %.120s, want %d %s", tt.name, status, got, tt.status, tt.code)
		}
	}
	// Nothing of that reached the log.
	page, err := e.alice.Events(t.Context(), s.ID, -1, 0)
	if err != nil || len(page.Events) != 0 {
		t.Fatalf("events after bad requests: %d, %v", len(page.Events), err)
	}

	// Export answers JSON lines with a download name.
	status, _ := e.raw(t, "GET", base+"/export", "", nil)
	if status != 200 {
		t.Fatalf("export of an empty log: %d", status)
	}
	req, _ := http.NewRequestWithContext(t.Context(), "GET", e.app.URL+base+"/export", nil)
	req.Header.Set("Authorization", "Bearer "+e.aliceTok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "application/x-ndjson" || !strings.Contains(res.Header.Get("Content-Disposition"), "session-"+s.ID+".jsonl") {
		t.Fatalf("export headers %v", res.Header)
	}
}

// Cookie clients need the CSRF token on unsafe requests; the Go client
// sends it.
func TestRESTWithCookie(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	cookie, info, err := e.app.Auth.Login(t.Context(), "alice", "alice-password", "127.0.0.1", "test")
	if err != nil {
		t.Fatal(err)
	}
	good := client.New(e.app.URL, client.WithCookie(cookie, info.CSRFToken))
	s, err := good.CreateSession(t.Context(), client.NewSession{Title: "cookie"})
	if err != nil {
		t.Fatal(err)
	}
	bad := client.New(e.app.URL, client.WithCookie(cookie, "wrong"))
	_, err = bad.CreateSession(t.Context(), client.NewSession{})
	wantErr(t, "wrong CSRF token", err, 403, "csrf")
	if _, err := bad.GetSession(t.Context(), s.ID); err != nil {
		t.Fatalf("a safe request needs no token: %v", err)
	}
	// The socket takes the cookie with a same-origin Origin.
	cn, err := good.Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close()
	if _, err := cn.Subscribe(t.Context(), s.ID, -1); err != nil {
		t.Fatal(err)
	}
	anon := client.New(e.app.URL)
	_, err = anon.ListSessions(t.Context(), client.ListOptions{})
	wantErr(t, "anonymous", err, 401, "unauthorized")
}

// TestEventsPageWire: the events page is streamed by hand (not through
// encoding/json): it must be valid JSON, each event byte for byte the
// stored one (as the export has it), for the whole log and for a cursor
// page, from the live log and from the store.
func TestEventsPageWire(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	ctx := t.Context()
	s, err := e.alice.CreateSession(ctx, client.NewSession{Prompt: `say "<&>" ünï ✓`, Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	e.idle(t, s.ID)
	var export bytes.Buffer
	if err := e.alice.Export(ctx, s.ID, &export); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(export.Bytes(), []byte("\n")), []byte("\n"))
	for _, stored := range []bool{false, true} {
		if stored {
			if err := e.app.Manager.Remove(ctx, s.ID); err != nil {
				t.Fatal(err)
			}
		}
		for _, since := range []int64{-1, 2, int64(len(lines) - 1)} {
			checkEventsPage(t, e, s.ID, since, lines)
		}
	}
}

func checkEventsPage(t *testing.T, e *apiEnv, id string, since int64, lines [][]byte) {
	t.Helper()
	ctx := t.Context()
	{
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/api/sessions/%s/events?since=%d", e.app.URL, id, since), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+e.aliceTok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/json" || !json.Valid(body) {
			t.Fatalf("since %d: %d %q, valid %v: %.200s", since, res.StatusCode, res.Header.Get("Content-Type"), json.Valid(body), body)
		}
		var page struct {
			Events []json.RawMessage `json:"events"`
			Head   int64             `json:"head"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		if page.Head != int64(len(lines)-1) || len(page.Events) != len(lines)-int(since)-1 {
			t.Fatalf("since %d: %d events, head %d; the export has %d", since, len(page.Events), page.Head, len(lines))
		}
		for i, ev := range page.Events {
			if want := lines[int(since)+1+i]; !bytes.Equal(ev, want) {
				t.Fatalf("since %d: event %d = %s, want %s", since, i, ev, want)
			}
		}
	}
}
