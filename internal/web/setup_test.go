package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"harness/internal/auth/authtest"
)

func TestSetupFlow(t *testing.T) {
	t.Parallel()
	db := authtest.OpenSQLite(t)
	logs := &syncBuffer{}
	svc := authtest.NewService(t, db, nil, slogTo(logs))
	path, err := svc.Bootstrap(t.Context(), "")
	if err != nil || !strings.HasPrefix(path, "/setup/") {
		t.Fatalf("Bootstrap = %q, %v", path, err)
	}
	srv := httptest.NewServer(New(Deps{Log: slogTo(logs), DB: writable{db}, Auth: svc}).Handler())
	t.Cleanup(srv.Close)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	get := func(p string, cookies ...*http.Cookie) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+p, nil)
		for _, c := range cookies {
			req.AddCookie(c)
		}
		return doWith(t, client, req)
	}
	// Before the first account: the login page says where the setup link
	// is and names the HARNESS_ADMIN_PASSWORD way; a stale link says where
	// the live one is.
	if res, body := get("/login"); res.StatusCode != 200 || !strings.Contains(body, `id="setup-hint"`) ||
		!strings.Contains(body, "one-time setup link in its log") || !strings.Contains(body, "HARNESS_ADMIN_PASSWORD") {
		t.Fatalf("login page of a fresh install: %d %s", res.StatusCode, body)
	}
	if res, body := get("/setup/" + strings.Repeat("a", len(path)-len("/setup/"))); res.StatusCode != 404 ||
		!strings.Contains(body, "prints it in its log") || !strings.Contains(body, "HARNESS_ADMIN_PASSWORD") {
		t.Fatalf("stale setup link before setup: %d %s", res.StatusCode, body)
	}
	res, body := get(path)
	pre := cookieNamed(res, preLoginCookie)
	if res.StatusCode != 200 || pre == nil || !strings.Contains(body, `value="`+pre.Value+`"`) {
		t.Fatalf("setup page: %d, pre-login cookie %v: %s", res.StatusCode, pre, body)
	}
	if res.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Fatal("setup page may leak its token in Referer")
	}
	post := func(name, pw, confirm string, withCSRF bool) (*http.Response, string) {
		form := url.Values{"name": {name}, "password": {pw}, "confirm": {confirm}}
		if withCSRF {
			form.Set("_csrf", pre.Value)
		}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(pre)
		return doWith(t, client, req)
	}
	tests := []struct {
		name, user, pw, confirm string
		csrf                    bool
		want                    int
		wantBody                string
	}{
		{"no form token", "root", "root-password", "root-password", false, 403, "form expired"},
		{"passwords differ", "root", "root-password", "root-passw0rd", true, 400, "do not match"},
		{"short password", "root", "short", "short", true, 400, "8 to 72 bytes"},
		{"bad name", "r o o t", "root-password", "root-password", true, 400, "user name"},
		{"ok", "root", "root-password", "root-password", true, 303, ""},
		{"used twice", "eve", "eve-password", "eve-password", true, 303, ""},
	}
	var session *http.Cookie
	for _, tt := range tests {
		res, body := post(tt.user, tt.pw, tt.confirm, tt.csrf)
		if res.StatusCode != tt.want || !strings.Contains(body, tt.wantBody) {
			t.Fatalf("%s: %d, want %d with %q: %s", tt.name, res.StatusCode, tt.want, tt.wantBody, body)
		}
		if strings.Contains(body, tt.pw) {
			t.Fatalf("%s: the page echoes the password", tt.name)
		}
		if tt.want == 303 && session == nil {
			session = cookieNamed(res, sessionCookie)
		}
	}
	if session == nil {
		t.Fatal("setup did not log the admin in")
	}
	if res, body := get("/", session); res.StatusCode != 200 || !strings.Contains(body, "Signed in as <strong>root</strong>") || !strings.Contains(body, "(admin)") {
		t.Fatalf("start page after setup: %d %s", res.StatusCode, body)
	}
	// Once an account exists, the used link (opened or posted again) says
	// setup is done and sends to the login page, which no longer explains
	// setup.
	for _, res := range []*http.Response{first(get(path)), first(post("eve", "eve-password", "eve-password", true))} {
		if loc := res.Header.Get("Location"); res.StatusCode != 303 || loc != "/login?flash=setup-done" {
			t.Fatalf("setup link after use: %d to %q, want 303 to the login page", res.StatusCode, loc)
		}
	}
	if res, body := get("/login?flash=setup-done"); res.StatusCode != 200 || !strings.Contains(body, "Setup is already done: an account exists. Sign in.") ||
		strings.Contains(body, `id="setup-hint"`) {
		t.Fatalf("login page after setup: %d %s", res.StatusCode, body)
	}
	if _, err := svc.GetUser(t.Context(), "eve"); err == nil {
		t.Fatal("a used setup link created a second account")
	}
	if strings.Contains(logs.String(), strings.TrimPrefix(path, "/setup/")) || strings.Contains(logs.String(), "root-password") {
		t.Fatalf("log holds the setup token or password:\n%s", logs.String())
	}
}

func first(res *http.Response, _ string) *http.Response { return res }
