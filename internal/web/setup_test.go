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
	srv := httptest.NewServer(New(Deps{Log: slogTo(logs), DB: db, Auth: svc}).Handler())
	t.Cleanup(srv.Close)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	get := func(p string, cookies ...*http.Cookie) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+p, nil)
		for _, c := range cookies {
			req.AddCookie(c)
		}
		return doWith(t, client, req)
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
		{"used twice", "eve", "eve-password", "eve-password", true, 404, "not valid"},
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
		if tt.want == 303 {
			session = cookieNamed(res, sessionCookie)
		}
	}
	if session == nil {
		t.Fatal("setup did not log the admin in")
	}
	if res, body := get("/", session); res.StatusCode != 200 || !strings.Contains(body, "Signed in as <strong>root</strong>") || !strings.Contains(body, "(admin)") {
		t.Fatalf("start page after setup: %d %s", res.StatusCode, body)
	}
	if res, _ := get(path); res.StatusCode != 404 {
		t.Fatalf("setup page after use: %d, want 404", res.StatusCode)
	}
	if strings.Contains(logs.String(), strings.TrimPrefix(path, "/setup/")) || strings.Contains(logs.String(), "root-password") {
		t.Fatalf("log holds the setup token or password:\n%s", logs.String())
	}
}
