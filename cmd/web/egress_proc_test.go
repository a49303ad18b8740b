package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"harness/client"
)

// From outside, as the issue checks it: the real binary (as root, tools as
// nobody), a session an admin turned network-on over HTTP, one local HTTP
// server in HARNESS_FETCH_HOSTS, and the demo model's run: rule. The
// listed server answers through the proxy; PostgreSQL on loopback does
// not, by the proxy or directly, and the refusal is in the session's log.
func TestEgressFromOutside(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "listed-local-site") }))
	t.Cleanup(site.Close)
	dir := t.TempDir()
	userToken(t, dir, "root-admin", true)
	tok := userToken(t, dir, "mallory", false)
	p := startServer(t, dir, "HARNESS_FETCH_HOSTS="+strings.TrimPrefix(site.URL, "http://"))
	c := client.New(p.URL, client.WithToken(tok))
	ctx := t.Context()
	s, err := c.CreateSession(ctx, client.NewSession{Provider: "demo", Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	// The admin's switch, from the session's menu in a browser.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	form := func(path string) string {
		res, err := browser.Get(p.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		m := regexp.MustCompile(`name="_csrf" value="([^"]+)"`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("no CSRF token on %s", path)
		}
		return string(m[1])
	}
	res, err := browser.PostForm(p.URL+"/login", url.Values{"_csrf": {form("/login")}, "name": {"root-admin"}, "password": {"root-admin-password"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	res, err = browser.PostForm(p.URL+"/sessions/"+s.ID+"/network", url.Values{"_csrf": {form("/sessions/" + s.ID)}, "network": {"1"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode >= 400 {
		t.Fatalf("the admin's network switch: %s", res.Status)
	}
	out := runTool(t, c, s.ID, `id -un; curl -sS --max-time 20 `+site.URL+`/; echo
curl -sS --max-time 20 http://127.0.0.1:5432/; echo
psql -h 127.0.0.1 -U postgres -d test -Atc "select 'pg-' || 'reached'" 2>&1 | head -1`)
	if (os.Geteuid() == 0 && !strings.Contains(out, "nobody")) || !strings.Contains(out, "listed-local-site") ||
		!strings.Contains(out, "refused to connect to 127.0.0.1:5432") || strings.Contains(out, "pg-reached") {
		t.Fatalf("output:\n%s", out)
	}
	noted := false
	for _, ev := range events(t, c, s.ID) {
		noted = noted || (ev.Type == "network/refused" && strings.Contains(string(ev.Data), `"port":5432`))
	}
	if !noted {
		t.Errorf("the refusal is not in the session's log")
	}
}
