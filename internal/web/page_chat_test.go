package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"harness/internal/config"
	"harness/internal/testkit/poll"
	"harness/internal/web"
)

func TestChatPage(t *testing.T) {
	t.Parallel()
	e := newPageEnv(t)
	admin := e.login("admin", "admin-password")
	id := admin.newSession("run: echo page-test", "auto")

	res, body := admin.get("/sessions/" + id)
	wantStatus(t, "chat page", res, http.StatusOK)
	csp := res.Header.Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self'", "default-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP allows inline code: %q", csp)
	}
	if regexp.MustCompile(`<script>|<script [^>]*>[^<]+</script>| on[a-z]+="`).MatchString(body) {
		t.Error("the page has an inline script or event handler")
	}
	wantBody(t, "chat page", body,
		`id="chat" data-session="`+id+`"`, `data-can-write="1"`,
		`<span class="model-label demo" id="model-label" title="Model">Offline demo model</span>`,
		`class="item tool tool-bash"`, "page-test", `id="composer"`, `id="transcript"`,
		`<script type="module" src="/static/app.js"></script>`)
	head := regexp.MustCompile(`data-head="(\d+)"`).FindStringSubmatch(body)
	if head == nil || head[1] == "0" {
		t.Fatalf("data-head missing: %v", head)
	}
	ag, _ := e.app.Manager.Lookup(id)
	if want := ag.Log().Len() - 1; head[1] != itoa64(want) {
		t.Errorf("data-head %s, want the log's head %d (the store was flushed)", head[1], want)
	}

	// The list shows it; the other user does not see it and gets 404.
	_, list := admin.get("/")
	wantBody(t, "session list", list, `data-session="`+id+`"`)
	bob := e.login("bob", "bob-password")
	res, body = bob.get("/sessions/" + id)
	wantStatus(t, "another user's session", res, http.StatusNotFound)
	wantBody(t, "404 page", body, "Session not found", "do not have access")
	res, _ = bob.get("/sessions/" + id + "/history?before=5")
	wantStatus(t, "another user's history", res, http.StatusNotFound)
	res, _ = bob.get("/sessions/" + id + "/export")
	wantStatus(t, "another user's export", res, http.StatusNotFound)
	if res.Header.Get("Content-Disposition") != "" {
		t.Error("a refused export is a download")
	}
	res, _ = bob.form("/sessions/"+id+"/rename", url.Values{"title": {"stolen"}})
	wantStatus(t, "another user's rename", res, http.StatusNotFound)

	// A form without the CSRF token is refused.
	res, _ = admin.post("/sessions/"+id+"/rename", url.Values{"title": {"x"}})
	wantStatus(t, "rename without CSRF", res, http.StatusForbidden)

	// Export is the log as a download.
	res, body = admin.get("/sessions/" + id + "/export")
	wantStatus(t, "export", res, http.StatusOK)
	if cd := res.Header.Get("Content-Disposition"); !strings.Contains(cd, "attachment") {
		t.Errorf("export disposition %q", cd)
	}
	if lines := strings.Count(body, "\n"); int64(lines) != ag.Log().Len() {
		t.Errorf("export has %d lines, want %d", lines, ag.Log().Len())
	}
}

func TestHistoryPages(t *testing.T) {
	t.Parallel()
	e := newPageEnv(t)
	admin := e.login("admin", "admin-password")
	id := admin.newSession("", "ask")
	for i := range 30 {
		res, _ := admin.form("/sessions/"+id+"/messages", url.Values{"content": {"message number " + itoa64(int64(i))}})
		wantStatus(t, "send", res, http.StatusSeeOther)
		e.idle(id)
	}
	_, body := admin.get("/sessions/" + id)
	before := regexp.MustCompile(`id="history-top" data-before="(\d+)" data-more="1"`).FindStringSubmatch(body)
	if before == nil {
		t.Fatal("the newest page does not offer older messages")
	}
	if strings.Contains(body, `<div class="user-text">message number 0</div>`) {
		t.Error("the first page reaches the oldest message")
	}
	seen := map[string]bool{}
	for page := 0; before != nil; page++ {
		res, frag := admin.get("/sessions/" + id + "/history?before=" + before[1])
		wantStatus(t, "history page", res, http.StatusOK)
		if strings.Contains(frag, "<html") {
			t.Fatal("a history page is a whole document")
		}
		for _, m := range regexp.MustCompile(`<div class="user-text">message number (\d+)</div>`).FindAllStringSubmatch(frag, -1) {
			if seen[m[1]] {
				t.Errorf("message %s on two pages", m[1])
			}
			seen[m[1]] = true
		}
		before = regexp.MustCompile(`class="history-page" data-before="(\d+)" data-more="1"`).FindStringSubmatch(frag)
		if page > 20 {
			t.Fatal("paging does not end")
		}
	}
	if !seen["0"] {
		t.Error("paging never reached the first message")
	}
	res, _ := admin.get("/sessions/" + id + "/history?before=x")
	wantStatus(t, "bad before", res, http.StatusBadRequest)
}

func TestSessionActions(t *testing.T) {
	t.Parallel()
	e := newPageEnv(t)
	admin := e.login("admin", "admin-password")
	id := admin.newSession("hello", "ask")

	res, _ := admin.form("/sessions/"+id+"/rename", url.Values{"title": {"Renamed <b>session</b>"}})
	wantStatus(t, "rename", res, http.StatusSeeOther)
	_, body := admin.get("/")
	wantBody(t, "list after rename", body, "Renamed &lt;b&gt;session&lt;/b&gt;")
	_, body = admin.get("/?q=renamed")
	wantBody(t, "search by title", body, `data-session="`+id+`"`)
	_, body = admin.get("/?q=nothing-matches-this")
	wantBody(t, "search without hits", body, "No session matches")

	res, _ = admin.form("/sessions/"+id+"/fork", nil)
	wantStatus(t, "fork", res, http.StatusSeeOther)
	fork := strings.TrimPrefix(res.Header.Get("Location"), "/sessions/")
	if fork == id || fork == "" {
		t.Fatalf("fork went to %q", fork)
	}

	res, _ = admin.form("/sessions/"+id+"/archive", url.Values{"archived": {"1"}})
	wantStatus(t, "archive", res, http.StatusSeeOther)
	_, body = admin.get("/")
	if strings.Contains(body, `class="session-row" data-session="`+id+`"`) {
		t.Error("an archived session is in the default list")
	}
	_, body = admin.get("/?archived=1")
	wantBody(t, "archived list", body, `class="session-row" data-session="`+id+`"`)

	res, body = admin.get("/sessions/" + id + "/delete")
	wantStatus(t, "delete confirmation", res, http.StatusOK)
	wantBody(t, "delete confirmation", body, "cannot be undone", `action="/sessions/`+id+`/delete"`)
	res, _ = admin.form("/sessions/"+id+"/delete", nil)
	wantStatus(t, "delete", res, http.StatusSeeOther)
	res, _ = admin.get("/sessions/" + id)
	wantStatus(t, "deleted session", res, http.StatusNotFound)
}

func TestSharingPagesAndViewer(t *testing.T) {
	t.Parallel()
	e := newPageEnv(t)
	admin := e.login("admin", "admin-password")
	id := admin.newSession("shared hello", "ask")

	res, _ := admin.form("/sessions/"+id+"/links", nil)
	wantStatus(t, "create link", res, http.StatusSeeOther)
	res, body := admin.get(res.Header.Get("Location"))
	wantStatus(t, "links page", res, http.StatusOK)
	m := regexp.MustCompile(`value="https?://[^"]+(/s/[A-Za-z0-9_-]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no link shown")
	}
	anon := &user{e: e, c: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	res, body = anon.get(m[1])
	wantStatus(t, "viewer page", res, http.StatusOK)
	wantBody(t, "viewer page", body, "shared hello", `data-can-write="0"`, `data-share="`, "Read-only live view")
	if strings.Contains(body, `id="composer"`) || strings.Contains(body, `id="sidebar"`) {
		t.Error("the viewer has a composer or the sidebar")
	}
	res, _ = anon.get(m[1] + "/history?before=3")
	wantStatus(t, "viewer history", res, http.StatusOK)
	// Only the link's session.
	res, _ = anon.get("/sessions/" + id)
	wantStatus(t, "viewer on the real page", res, http.StatusSeeOther)

	res, body = admin.form("/sessions/"+id+"/members", url.Values{"name": {"nobody"}, "role": {"viewer"}})
	wantStatus(t, "unknown member", res, http.StatusBadRequest)
	wantBody(t, "unknown member", body, "There is no user with that name.")
	res, _ = admin.form("/sessions/"+id+"/members", url.Values{"name": {"bob"}, "role": {"viewer"}})
	wantStatus(t, "add viewer", res, http.StatusSeeOther)
	bob := e.login("bob", "bob-password")
	res, body = bob.get("/sessions/" + id)
	wantStatus(t, "member viewer page", res, http.StatusOK)
	wantBody(t, "member viewer page", body, `data-can-write="0"`, "Read-only live view", `<div class="author">admin</div>`)
	res, body = bob.form("/sessions/"+id+"/rename", url.Values{"title": {"x"}})
	wantStatus(t, "viewer rename", res, http.StatusForbidden)
	wantBody(t, "403 page", body, "Not allowed")

	// Revoke: the link stops working.
	_, body = admin.get("/sessions/" + id + "/sharing")
	lm := regexp.MustCompile(`/links/([0-9a-f-]+)/revoke`).FindStringSubmatch(body)
	if lm == nil {
		t.Fatal("no revoke form")
	}
	res, _ = admin.form("/sessions/"+id+"/links/"+lm[1]+"/revoke", nil)
	wantStatus(t, "revoke", res, http.StatusSeeOther)
	res, body = anon.get(m[1])
	wantStatus(t, "revoked link", res, http.StatusNotFound)
	wantBody(t, "revoked link", body, "Link not valid")
	res, body = anon.get(m[1] + "/history?before=3")
	wantStatus(t, "revoked link history", res, http.StatusNotFound)
	wantBody(t, "revoked link history", body, "Link not valid")
	res, _ = anon.get("/s/not-a-token")
	wantStatus(t, "unknown link", res, http.StatusNotFound)
}

func itoa64(n int64) string {
	const digits = "0123456789"
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{digits[n%10]}, b...)
		n /= 10
	}
	return string(b)
}

// TestColdChatPage: the chat page of a session that is not loaded does not
// load it (its socket brings the live state), and still shows the todo list
// of a todo/write older than the newest page, read from the store.
func TestColdChatPage(t *testing.T) {
	t.Parallel()
	e := newPageEnvWith(t, func(c *config.Config) { c.IdleUnload = 30 * time.Millisecond })
	admin := e.login("admin", "admin-password")
	id := admin.newSession("todo: alpha item; beta item", "auto")
	e.idle(id)
	for i := range web.HistoryMessages/2 + 2 {
		res, _ := admin.form("/sessions/"+id+"/messages", url.Values{"content": {"later message " + itoa64(int64(i))}})
		wantStatus(t, "send", res, http.StatusSeeOther)
		e.idle(id)
	}
	poll.Eventually(t, "the idle session to unload", func() bool {
		_, ok := e.app.Manager.Lookup(id)
		return !ok
	}, poll.Within(10*time.Second))

	res, body := admin.get("/sessions/" + id)
	wantStatus(t, "cold chat page", res, http.StatusOK)
	if strings.Contains(body, `<div class="user-text">todo: alpha`) {
		t.Fatal("the newest page reaches back to the todo prompt: the test needs more messages")
	}
	wantBody(t, "cold chat page", body, `id="todo-dock"`, `<span class="todo-text">alpha item</span>`, `<span class="todo-text">beta item</span>`, "later message")
	if _, ok := e.app.Manager.Lookup(id); ok {
		t.Error("the chat page loaded the session")
	}
}
