package web

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// postLogin submits the login form with a valid pre-login token.
func postLogin(t *testing.T, client *http.Client, base, name, pw, xff string, header map[string]string) (*http.Response, string) {
	t.Helper()
	tok := strings.Repeat("q", preLoginLen)
	form := url.Values{"name": {name}, "password": {pw}, "_csrf": {tok}, "next": {"/after"}}
	req, _ := http.NewRequest(http.MethodPost, base+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: preLoginCookie, Value: tok})
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return doWith(t, client, req)
}

func TestSessionCookieFlags(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, scenarioOptions{})
	// A server that trusts no proxy: its loopback peer may be a tool.
	direct := httptest.NewServer(New(Deps{Log: slogTo(io.Discard), DB: writable{env.DB}, Auth: env.Auth}).Handler())
	t.Cleanup(direct.Close)
	tlsSrv := httptest.NewTLSServer(env.Server.Handler())
	t.Cleanup(tlsSrv.Close)
	tlsClient := tlsSrv.Client() // trusts the test certificate
	tlsClient.CheckRedirect = env.client.CheckRedirect

	tests := []struct {
		name       string
		client     *http.Client
		base       string
		header     map[string]string
		wantSecure bool
	}{
		{"plain http", env.client, env.URL, nil, false},
		{"behind a TLS proxy", env.client, env.URL, map[string]string{"X-Forwarded-Proto": "https"}, true},
		{"proxy says http", env.client, env.URL, map[string]string{"X-Forwarded-Proto": "http"}, false},
		{"an untrusted peer says https", env.client, direct.URL, map[string]string{"X-Forwarded-Proto": "https"}, false},
		{"direct TLS", tlsClient, tlsSrv.URL, nil, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, body := postLogin(t, tt.client, tt.base, "owner", password(actorOwner), fmt.Sprintf("203.0.113.%d", i), tt.header)
			if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/after" {
				t.Fatalf("login: %d to %q: %s", res.StatusCode, res.Header.Get("Location"), body)
			}
			c := cookieNamed(res, sessionCookie)
			if c == nil {
				t.Fatal("no session cookie")
			}
			if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure != tt.wantSecure {
				t.Fatalf("cookie flags: HttpOnly=%v SameSite=%v Path=%q Secure=%v; want true Lax / %v",
					c.HttpOnly, c.SameSite, c.Path, c.Secure, tt.wantSecure)
			}
			if c.MaxAge != int((30 * 24 * time.Hour).Seconds()) {
				t.Fatalf("Max-Age = %d, want 30 days", c.MaxAge)
			}
			raw := res.Header.Values("Set-Cookie")
			for _, line := range raw {
				if strings.HasPrefix(line, sessionCookie+"=") && !strings.Contains(line, "SameSite=Lax") {
					t.Fatalf("Set-Cookie %q lacks SameSite=Lax", line)
				}
			}
			// The cookie works, and logging out clears it.
			req, _ := http.NewRequest(http.MethodGet, tt.base+"/api/me", nil)
			req.AddCookie(c)
			if res, body := doWith(t, tt.client, req); res.StatusCode != 200 || !strings.Contains(body, `"name":"owner"`) {
				t.Fatalf("/api/me with the new cookie: %d %s", res.StatusCode, body)
			}
		})
	}
}

func TestLogout(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, scenarioOptions{})
	cookie, csrf := env.login(t, actorOwner)
	get := func() *http.Response {
		req, _ := http.NewRequest(http.MethodGet, env.URL+"/", nil)
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: cookie})
		res, _ := env.do(t, req)
		return res
	}
	if res := get(); res.StatusCode != 200 {
		t.Fatalf("start page before logout: %d", res.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodPost, env.URL+"/logout", strings.NewReader(url.Values{"_csrf": {csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: cookie})
	res, _ := env.do(t, req)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/login" {
		t.Fatalf("logout: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	if c := cookieNamed(res, sessionCookie); c == nil || c.MaxAge >= 0 || c.Value != "" {
		t.Fatalf("logout did not clear the cookie: %+v", c)
	}
	res = get()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/login?next=%2F" {
		t.Fatalf("start page after logout: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	// The stale cookie is cleared on sight.
	if c := cookieNamed(res, sessionCookie); c == nil || c.MaxAge >= 0 {
		t.Fatalf("stale cookie not cleared: %+v", c)
	}
}

// Failed logins lock out a name from the address that failed, with 429 and
// Retry-After, never the name everywhere: a stranger failing the owner's
// password from other addresses does not stop the owner (the limit per
// address across names is in internal/auth's table). The addresses are
// forwarded by the harness's trusted loopback proxy.
func TestLoginRateLimitHTTP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		user, addr func(i int) string
		locked     bool // the 6th attempt, with the right password, is refused
	}{
		{"one name from one address", func(int) string { return "owner" }, func(int) string { return "203.0.113.50" }, true},
		{"one name from many addresses", func(int) string { return "owner" }, func(i int) string { return fmt.Sprintf("203.0.113.%d", 60+i) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := newScenarioEnv(t, scenarioOptions{})
			for i := range 5 {
				res, _ := postLogin(t, env.client, env.URL, tt.user(i), "wrong-password", tt.addr(i), nil)
				if res.StatusCode != http.StatusUnauthorized {
					t.Fatalf("attempt %d: %d, want 401", i+1, res.StatusCode)
				}
				env.Clock.Advance(time.Second)
			}
			res, body := postLogin(t, env.client, env.URL, "owner", password(actorOwner), tt.addr(5), nil)
			if !tt.locked {
				if res.StatusCode != http.StatusSeeOther {
					t.Fatalf("the owner's login after a stranger's failures: %d, want 303", res.StatusCode)
				}
				return
			}
			if res.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("6th attempt: %d, want 429", res.StatusCode)
			}
			secs, err := strconv.Atoi(res.Header.Get("Retry-After"))
			if err != nil || secs != 55 {
				t.Fatalf("Retry-After = %q, want 55", res.Header.Get("Retry-After"))
			}
			if !strings.Contains(body, "Try again in 55 seconds") || cookieNamed(res, sessionCookie) != nil {
				t.Fatalf("429 page: %s", body)
			}
			// The same name from another address, and another user, are not
			// affected.
			for _, who := range []struct {
				name string
				a    scenarioActor
			}{{"owner", actorOwner}, {"viewer", actorViewer}} {
				if res, _ := postLogin(t, env.client, env.URL, who.name, password(who.a), "203.0.113.200", nil); res.StatusCode != http.StatusSeeOther {
					t.Fatalf("%s from another address: %d", who.name, res.StatusCode)
				}
			}
			env.Clock.Advance(55 * time.Second)
			if res, _ := postLogin(t, env.client, env.URL, "owner", password(actorOwner), tt.addr(5), nil); res.StatusCode != http.StatusSeeOther {
				t.Fatalf("after Retry-After: %d", res.StatusCode)
			}
		})
	}
}

// TestLoginNoEnumeration: an unknown name and a wrong password get the
// same status and page, and the password is never echoed.
func TestLoginNoEnumeration(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, scenarioOptions{})
	page := func(name, xff string) (int, string) {
		res, body := postLogin(t, env.client, env.URL, name, "Secret-Guess-123", xff, nil)
		if strings.Contains(body, "Secret-Guess-123") {
			t.Fatalf("login page echoes the password")
		}
		return res.StatusCode, strings.ReplaceAll(body, name, "NAME")
	}
	s1, unknown := page("zed-unknown", "203.0.113.1")
	s2, wrong := page("owner", "203.0.113.2")
	if s1 != 401 || s2 != 401 || unknown != wrong {
		t.Fatalf("unknown user (%d) and wrong password (%d) differ:\n%s\n---\n%s", s1, s2, unknown, wrong)
	}
	if !strings.Contains(wrong, "Invalid name or password.") {
		t.Fatalf("page lacks the generic message: %s", wrong)
	}
	if strings.Contains(env.Logs.String(), "zed-unknown") {
		t.Fatalf("an unknown name (maybe a mistyped password) reached the log")
	}
}

func TestLoginRedirects(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, scenarioOptions{})
	cookie, _ := env.login(t, actorOwner)
	tests := []struct{ next, want string }{
		{"/s/abc?x=1", "/s/abc?x=1"},
		{"", "/"},
		{"//evil.example/", "/"},
		{"/\\evil.example", "/"},
		{"https://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodGet, env.URL+"/login?next="+url.QueryEscape(tt.next), nil)
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: cookie})
		res, _ := env.do(t, req)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != tt.want {
			t.Errorf("next=%q: %d to %q, want %q", tt.next, res.StatusCode, res.Header.Get("Location"), tt.want)
		}
	}
}

func TestLoginReplacesPreviousSession(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, scenarioOptions{})
	old, _ := env.login(t, actorViewer)
	tok := strings.Repeat("q", preLoginLen)
	form := url.Values{"name": {"owner"}, "password": {password(actorOwner)}, "_csrf": {tok}}
	req, _ := http.NewRequest(http.MethodPost, env.URL+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: preLoginCookie, Value: tok})
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: old})
	res, _ := env.do(t, req)
	if res.StatusCode != http.StatusSeeOther || cookieNamed(res, sessionCookie) == nil {
		t.Fatalf("login: %d", res.StatusCode)
	}
	if _, _, err := env.Auth.Session(t.Context(), old); err == nil {
		t.Fatal("the previous login session outlived a new login")
	}
}

// TestLoginForwardedForNeedsATrustedProxy: a tool with the network on
// reaches the server from loopback and may send any X-Forwarded-For. With
// no trusted proxy (the default) the peer is the client: 30 bad passwords
// for one name, each with another X-Forwarded-For, run into 429, the
// right password is refused while the limit lasts, and no forged address
// reaches a log line. Behind a trusted proxy each forwarded address is its
// own client (TestLoginRateLimitHTTP's rows run that way).
func TestLoginForwardedForNeedsATrustedProxy(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, scenarioOptions{Deps: func(_ *scenarioEnv, d *Deps) { d.TrustedProxies = nil }})
	forged := func(i int) string { return fmt.Sprintf("198.18.%d.%d", i/200, 1+i%200) }
	var limited int
	for i := range 30 {
		res, _ := postLogin(t, env.client, env.URL, "admin", "wrong-password", forged(i), nil)
		switch {
		case i < 5 && res.StatusCode != http.StatusUnauthorized:
			t.Fatalf("attempt %d: %d, want 401", i+1, res.StatusCode)
		case i >= 5 && res.StatusCode != http.StatusTooManyRequests:
			t.Fatalf("attempt %d: %d, want 429 (the forged addresses must not count as clients)", i+1, res.StatusCode)
		case res.StatusCode == http.StatusTooManyRequests:
			limited++
		}
	}
	res, body := postLogin(t, env.client, env.URL, "admin", password(actorAdmin), forged(30), nil)
	if res.StatusCode != http.StatusTooManyRequests || cookieNamed(res, sessionCookie) != nil {
		t.Fatalf("the right password while limited: %d %s", res.StatusCode, body)
	}
	if logs := env.Logs.String(); strings.Contains(logs, "198.18.") || !strings.Contains(logs, "addr=127.0.0.1") {
		t.Fatalf("the logs name a forged address, or not the peer:\n%s", logs)
	}
	t.Logf("%d of 30 attempts refused with 429", limited)
}

// TestLoginBehindATrustedProxy: behind a listed proxy each forwarded
// address is its own client. Rotating addresses are separate clients (no
// limit per name alone, as before), one forwarded address is limited
// across names (20 failures), and a client's own X-Forwarded-For entries,
// left of the proxy's, change nothing.
func TestLoginBehindATrustedProxy(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, scenarioOptions{}) // trusts its loopback peer
	for i := range 30 {
		if res, _ := postLogin(t, env.client, env.URL, "admin", "wrong-password", fmt.Sprintf("198.18.0.%d", 1+i), nil); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("attempt %d from its own address: %d, want 401", i+1, res.StatusCode)
		}
	}
	if res, _ := postLogin(t, env.client, env.URL, "admin", password(actorAdmin), "198.18.1.1", nil); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the admin from another address: %d, want 303", res.StatusCode)
	}
	// One client trying 20 names, each with a forged entry of its own in
	// front of the proxy's.
	for i := range 20 {
		xff := fmt.Sprintf("10.%d.0.1, 198.18.2.2", i)
		if res, _ := postLogin(t, env.client, env.URL, fmt.Sprintf("guess%d", i), "wrong-password", xff, nil); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("name %d: %d, want 401", i+1, res.StatusCode)
		}
	}
	if res, _ := postLogin(t, env.client, env.URL, "viewer", password(actorViewer), "10.99.0.1, 198.18.2.2", nil); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the 21st attempt from one forwarded address: %d, want 429", res.StatusCode)
	}
}
