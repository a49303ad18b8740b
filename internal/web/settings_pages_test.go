package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"harness/internal/llm/fake"
)

func TestSettingsRoutesAndPrefs(t *testing.T) {
	t.Parallel()
	e := newPageEnv(t)
	admin := e.login("admin", "admin-password")
	srv := fake.NewServer(fake.Script{Replies: []fake.Reply{{Text: "hello from the configured route"}}})
	base := srv.Start(t)

	// Add an OpenAI-compatible route with a key.
	const key = "sk-admin-secret-key-123456"
	res, _ := admin.form("/settings/providers", url.Values{
		"name": {"local"}, "kind": {"openai"}, "base_url": {base}, "api_key": {key},
		"models": {"m1, m2"}, "enabled": {"1"},
	})
	wantStatus(t, "add route", res, http.StatusSeeOther)
	if _, ok := e.app.Providers.Get("local"); !ok {
		t.Fatal("the route is not in the live registry")
	}
	_, body := admin.get("/settings")
	wantBody(t, "settings", body, `data-route="local"`, "key set", "m1, m2", "Offline demo model")
	if strings.Contains(body, key) {
		t.Fatal("the settings page shows the API key")
	}
	// Saving again without a key keeps the stored one.
	res, _ = admin.form("/settings/providers", url.Values{
		"name": {"local"}, "kind": {"openai"}, "base_url": {base}, "models": {"m1, m2, m3"}, "enabled": {"1"},
	})
	wantStatus(t, "edit route", res, http.StatusSeeOther)
	pc, err := e.app.Settings.Provider(t.Context(), "local")
	if err != nil || pc.APIKey != key {
		t.Fatalf("stored key after an edit without one: %q, %v", pc.APIKey, err)
	}

	// Bad input is explained; built-in names are reserved.
	for _, tc := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"name": {"Bad Name"}, "kind": {"openai"}, "base_url": {base}, "models": {"x"}}, "a route name has"},
		{url.Values{"name": {"x"}, "kind": {"other"}}, "kind must be deepseek or openai"},
		{url.Values{"name": {"x"}, "kind": {"openai"}, "base_url": {"ftp://x"}, "models": {"m"}}, "http or https"},
		{url.Values{"name": {"demo"}, "kind": {"deepseek"}}, "built-in route"},
	} {
		res, body := admin.form("/settings/providers", tc.form)
		wantStatus(t, "bad route "+tc.want, res, http.StatusBadRequest)
		wantBody(t, "bad route", body, tc.want)
	}

	// The server default, and a user's own default for new sessions.
	res, _ = admin.form("/settings/default", url.Values{"route": {"local/m2"}})
	wantStatus(t, "set default", res, http.StatusSeeOther)
	if p, m := e.app.Providers.Default(); p != "local" || m != "m2" {
		t.Fatalf("default route %s/%s", p, m)
	}
	bob := e.login("bob", "bob-password")
	res, _ = bob.form("/settings/prefs", url.Values{"route": {"demo/demo"}, "mode": {"auto"}})
	wantStatus(t, "save prefs", res, http.StatusSeeOther)
	id := bob.newSession("", "")
	sess, err := e.app.Service.GetSession(t.Context(), bobActor(t, e), id)
	if err != nil {
		t.Fatal(err)
	}
	if sess.Provider != "demo" || string(sess.Mode) != "auto" {
		t.Errorf("bob's new session: %s, %s; want his defaults demo, auto", sess.Provider, sess.Mode)
	}
	res, _ = bob.form("/settings/providers", url.Values{"name": {"x"}})
	wantStatus(t, "a user editing routes", res, http.StatusForbidden)
	res, _ = bob.form("/settings/prefs", url.Values{"route": {"gone/x"}, "mode": {"auto"}})
	wantStatus(t, "prefs with an unknown route", res, http.StatusBadRequest)

	// A session on the configured route talks to it.
	id = admin.newSession("hi", "ask")
	_, body = admin.get("/sessions/" + id)
	wantBody(t, "chat on the configured route", body, "hello from the configured route", "local (OpenAI-compatible)")

	// Delete: gone from the registry; the default falls back.
	res, _ = admin.form("/settings/providers/local/delete", nil)
	wantStatus(t, "delete route", res, http.StatusSeeOther)
	if _, ok := e.app.Providers.Get("local"); ok {
		t.Fatal("a deleted route is still live")
	}
	res, _ = admin.form("/settings/providers/demo/delete", nil)
	wantStatus(t, "delete a built-in route", res, http.StatusBadRequest)
}

func TestAdminUsers(t *testing.T) {
	t.Parallel()
	e := newPageEnv(t)
	admin := e.login("admin", "admin-password")
	res, body := admin.get("/admin/users")
	wantStatus(t, "users page", res, http.StatusOK)
	wantBody(t, "users page", body, `data-user="admin"`, `data-user="bob"`)

	res, _ = admin.form("/admin/users", url.Values{"name": {"carol"}, "password": {"carol-password"}})
	wantStatus(t, "create user", res, http.StatusSeeOther)
	res, body = admin.form("/admin/users", url.Values{"name": {"carol"}, "password": {"carol-password"}})
	wantStatus(t, "duplicate user", res, http.StatusConflict)
	wantBody(t, "duplicate user", body, "already exists")
	res, body = admin.form("/admin/users", url.Values{"name": {"dave"}, "password": {"short"}})
	wantStatus(t, "short password", res, http.StatusBadRequest)
	wantBody(t, "short password", body, "password")
	carol := e.login("carol", "carol-password")
	if carol.csrf == "" {
		t.Fatal("carol cannot sign in")
	}

	res, _ = admin.form("/admin/users/carol/disabled", url.Values{"disabled": {"1"}})
	wantStatus(t, "disable", res, http.StatusSeeOther)
	res, _ = carol.get("/")
	wantStatus(t, "disabled user's page", res, http.StatusSeeOther) // to the login page
	res, _ = admin.form("/admin/users/carol/disabled", url.Values{"disabled": {"0"}})
	wantStatus(t, "enable", res, http.StatusSeeOther)
	res, _ = admin.form("/admin/users/carol/password", url.Values{"password": {"new-carol-password"}})
	wantStatus(t, "reset password", res, http.StatusSeeOther)
	e.login("carol", "new-carol-password")

	res, _ = admin.form("/admin/users/carol/role", url.Values{"role": {"admin"}})
	wantStatus(t, "promote", res, http.StatusSeeOther)
	res, body = admin.form("/admin/users/admin/disabled", url.Values{"disabled": {"1"}})
	wantStatus(t, "disable oneself", res, http.StatusBadRequest)
	wantBody(t, "disable oneself", body, "cannot disable yourself")

	bob := e.login("bob", "bob-password")
	res, body = bob.get("/admin/users")
	wantStatus(t, "users page for a user", res, http.StatusForbidden)
	wantBody(t, "403 page", body, "Forbidden")
}

// TestSettingsRoutePricesAndConnectionTest: an admin stores a route's
// prices and window (the form shows them again), and its "Test connection"
// button answers ok, then the provider's coded failure without the key;
// a user may not run it.
func TestSettingsRoutePricesAndConnectionTest(t *testing.T) {
	t.Parallel()
	e := newPageEnv(t)
	admin := e.login("admin", "admin-password")
	const key = "sk-conn-test-secret-987654"
	srv := fake.NewServer(fake.Script{Replies: []fake.Reply{
		{Text: "pong"},
		{Error: &fake.HTTPError{Status: 401, Message: "Incorrect API key provided: " + key}},
	}}, fake.WithChunkDelay(0))
	base := srv.Start(t)
	res, _ := admin.form("/settings/providers", url.Values{
		"name": {"priced"}, "kind": {"openai"}, "base_url": {base}, "api_key": {key}, "models": {"m1"}, "enabled": {"1"},
		"input_price": {"0.27"}, "cached_input_price": {"0.07"}, "output_price": {"1.1"}, "context_window": {"64000"},
	})
	wantStatus(t, "route with prices", res, http.StatusSeeOther)
	_, body := admin.get("/settings")
	wantBody(t, "settings", body, `name="input_price" min="0" step="any" inputmode="decimal" value="0.27"`, `value="0.07"`, `value="1.1"`,
		`name="context_window" min="1" step="1" value="64000"`, `action="/settings/providers/priced/test"`)
	res, body = admin.form("/settings/providers", url.Values{
		"name": {"priced"}, "kind": {"openai"}, "base_url": {base}, "models": {"m1"}, "input_price": {"-1"}, "output_price": {"1"},
	})
	wantStatus(t, "negative price", res, http.StatusBadRequest)
	wantBody(t, "negative price", body, "the input price must be a number")

	res, body = admin.form("/settings/providers/priced/test", nil)
	wantStatus(t, "test ok", res, http.StatusOK)
	wantBody(t, "test ok", body, "Route priced: the connection works")
	res, body = admin.form("/settings/providers/priced/test", nil)
	wantStatus(t, "test failing", res, http.StatusOK)
	wantBody(t, "test failing", body, "the connection test failed: AUTH: ")
	if strings.Contains(body, key) {
		t.Fatal("the failed test shows the API key")
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("the model server got %d requests, want one per test", n)
	}
	res, body = admin.form("/settings/providers/demo/test", nil)
	wantStatus(t, "test a built-in route", res, http.StatusBadRequest)
	wantBody(t, "test a built-in route", body, "only routes stored in Settings")

	bob := e.login("bob", "bob-password")
	res, _ = bob.form("/settings/providers/priced/test", nil)
	wantStatus(t, "a user testing a route", res, http.StatusForbidden)
}
