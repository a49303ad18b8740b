package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"harness/internal/app"
	"harness/internal/auth"
	"harness/internal/config"
	"harness/internal/llm/fake"
	"harness/internal/testkit/apptest"
)

// pageEnv is the real server with two users, driven like a browser
// without script: cookie jar, forms with the CSRF token.
type pageEnv struct {
	t   *testing.T
	app *apptest.App
}

func newPageEnv(t *testing.T) *pageEnv {
	t.Helper()
	return newPageEnvWith(t, nil)
}

// newPageEnvWith is newPageEnv with a change to the configuration.
func newPageEnvWith(t *testing.T, cfg func(*config.Config)) *pageEnv {
	t.Helper()
	a := apptest.StartApp(t, func(c *config.Config) {
		c.AdminPassword = "admin-password"
		if cfg != nil {
			cfg(c)
		}
	}, app.Options{
		DemoOptions: []fake.Option{fake.WithChunkDelay(0)},
	})
	if err := a.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Auth.CreateUser(t.Context(), "bob", "bob-password", false); err != nil {
		t.Fatal(err)
	}
	return &pageEnv{t: t, app: a}
}

// user is a signed-in browser without script.
type user struct {
	e    *pageEnv
	c    *http.Client
	csrf string
}

var csrfInput = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

func (e *pageEnv) login(name, pass string) *user {
	e.t.Helper()
	jar, _ := cookiejar.New(nil)
	u := &user{e: e, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	_, body := u.get("/login")
	m := csrfInput.FindStringSubmatch(body)
	if m == nil {
		e.t.Fatal("no CSRF token on the login page")
	}
	res, _ := u.post("/login", url.Values{"_csrf": {m[1]}, "name": {name}, "password": {pass}})
	if res.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("login %s: %d", name, res.StatusCode)
	}
	_, body = u.get("/")
	if m = csrfInput.FindStringSubmatch(body); m == nil {
		e.t.Fatal("no CSRF token on the start page")
	}
	u.csrf = m[1]
	return u
}

func (u *user) get(path string) (*http.Response, string) {
	u.e.t.Helper()
	res, err := u.c.Get(u.e.app.URL + path)
	if err != nil {
		u.e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// form posts a form with the user's CSRF token.
func (u *user) form(path string, v url.Values) (*http.Response, string) {
	u.e.t.Helper()
	if v == nil {
		v = url.Values{}
	}
	v.Set("_csrf", u.csrf)
	return u.post(path, v)
}

func (u *user) post(path string, v url.Values) (*http.Response, string) {
	u.e.t.Helper()
	res, err := u.c.PostForm(u.e.app.URL+path, v)
	if err != nil {
		u.e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// newSession creates a session from the list page's form and returns its
// id.
func (u *user) newSession(prompt, mode string) string {
	u.e.t.Helper()
	res, _ := u.form("/sessions", url.Values{"prompt": {prompt}, "mode": {mode}})
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/sessions/") {
		u.e.t.Fatalf("create session: %d %s", res.StatusCode, loc)
	}
	id := strings.TrimPrefix(loc, "/sessions/")
	if prompt != "" {
		u.e.idle(id)
	}
	return id
}

func (e *pageEnv) idle(id string) {
	e.t.Helper()
	ag, ok := e.app.Manager.Lookup(id)
	if !ok {
		return
	}
	// A send opens its turn before it answers, so Wait cannot return
	// before the turn it waits for.
	ctx, cancel := context.WithTimeout(e.t.Context(), 20*time.Second)
	defer cancel()
	if err := ag.Wait(ctx); err != nil {
		e.t.Fatal(err)
	}
	if err := e.app.Store.W.Flush(ctx, id); err != nil {
		e.t.Fatal(err)
	}
}

func wantStatus(t *testing.T, what string, res *http.Response, status int) {
	t.Helper()
	if res.StatusCode != status {
		t.Fatalf("%s: status %d, want %d", what, res.StatusCode, status)
	}
}

func wantBody(t *testing.T, what, body string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
}

func bobActor(t *testing.T, e *pageEnv) *auth.Actor {
	t.Helper()
	u, err := e.app.Auth.GetUser(t.Context(), "bob")
	if err != nil {
		t.Fatal(err)
	}
	return &auth.Actor{UserID: u.ID, Name: u.Name, Role: u.Role, Via: auth.ViaToken}
}

// Without script, exactly "/compact" in the composer compacts the session
// instead of reaching the model.
func TestPageComposerCompactWithoutScript(t *testing.T) {
	t.Parallel()
	e := newPageEnv(t)
	admin := e.login("admin", "admin-password")
	id := admin.newSession("first question about the parser", "ask")
	for _, p := range []string{"second question", "third question"} {
		if res, _ := admin.form("/sessions/"+id+"/messages", url.Values{"content": {p}}); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("send: %d", res.StatusCode)
		}
		e.idle(id)
	}
	ag, err := e.app.Manager.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	before := ag.Log().Len()
	if res, body := admin.form("/sessions/"+id+"/messages", url.Values{"content": {"  /compact  "}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("/compact: %d %s", res.StatusCode, body)
	}
	var types []string
	for _, ev := range ag.Log().Events(before, ag.Log().Len()) {
		types = append(types, string(ev.Type))
	}
	got := strings.Join(types, " ")
	if !strings.Contains(got, "compaction/start") || !strings.Contains(got, "compaction/summary") || strings.Contains(got, "turn/start") {
		t.Fatalf("after /compact: %s", got)
	}
}
