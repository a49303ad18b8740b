package web_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"harness/internal/config"
)

// Settings → MCP servers: an admin sees each configured server, where it
// runs and its access, never a header value or the URL's query; a user
// does not see the section.
func TestSettingsMCPServers(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "mcp.json")
	cfg := `{"servers": {
		"docs": {"url": "https://mcp.example.com/mcp?key=topsecret-query", "headers": {"Authorization": "Bearer topsecret-header"}, "readOnly": true},
		"tools": {"command": "node", "args": ["/opt/mcp/server.js", "."], "env": {"API_KEY": "topsecret-env"}, "timeout": "45s"}
	}}`
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newPageEnvWith(t, func(c *config.Config) { c.MCPConfig = file })
	admin := e.login("admin", "admin-password")
	_, body := admin.get("/settings")
	wantBody(t, "settings", body, `id="mcp"`, `data-server="docs"`, "<code>https://mcp.example.com/mcp</code>", "read-only (no approval)",
		`data-server="tools"`, "<code>node /opt/mcp/server.js .</code>", "exec (approval in ask mode)", "45s",
		"no live session has used it", "Its tools are listed once a session has connected.")
	if strings.Contains(body, "topsecret") {
		t.Fatal("the settings page shows a secret")
	}

	bob := e.login("bob", "bob-password")
	_, body = bob.get("/settings")
	if strings.Contains(body, `id="mcp"`) {
		t.Fatal("a user sees the MCP servers")
	}
}

// Settings → MCP servers → Add: an admin adds a streamable HTTP server
// (stored, applied: the page lists it with its edit form, which names the
// header but never shows its value or the URL's query); an edit with empty
// values keeps them; a refused form is explained; the config file's
// servers have no form and cannot be removed; a user can do none of it;
// removing it takes it off the page.
func TestSettingsAddMCPServer(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(file, []byte(`{"servers": {"docs": {"url": "https://docs.example/mcp"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newPageEnvWith(t, func(c *config.Config) { c.MCPConfig = file })
	admin := e.login("admin", "admin-password")
	bob := e.login("bob", "bob-password")
	add := url.Values{"name": {"search"}, "transport": {"http"}, "url": {"https://search.example/mcp?key=topsecret-query"},
		"headers": {"Authorization: Bearer topsecret-header"}, "read_only": {"1"}, "timeout": {"45s"}}

	res, _ := bob.form("/settings/mcp", add)
	wantStatus(t, "a user adds", res, http.StatusForbidden)
	res, _ = admin.form("/settings/mcp", add)
	wantStatus(t, "add", res, http.StatusSeeOther)
	if loc := res.Header.Get("Location"); !strings.HasPrefix(loc, "/settings") {
		t.Fatalf("redirect to %q", loc)
	}
	servers := e.app.MCP.Servers()
	if len(servers) != 2 || servers[1].Name != "search" || !servers[1].ReadOnly || servers[1].Headers["Authorization"] != "Bearer topsecret-header" {
		t.Fatalf("servers %+v", servers)
	}
	_, body := admin.get("/settings")
	wantBody(t, "settings", body, `data-server="search"`, "<code>https://search.example/mcp</code>", "45s", "Edit search",
		"Authorization:</textarea>", `action="/settings/mcp/search/delete"`, `data-server="docs"`, "config file")
	if strings.Contains(body, "topsecret") {
		t.Fatal("the settings page shows a secret")
	}
	if strings.Contains(body, `action="/settings/mcp/docs/delete"`) {
		t.Fatal("the config file's server can be removed")
	}

	// The edit form as the page fills it keeps the secrets.
	res, _ = admin.form("/settings/mcp", url.Values{"name": {"search"}, "transport": {"http"}, "url": {""},
		"headers": {"Authorization:"}, "read_only": {"1"}, "timeout": {"1m"}})
	wantStatus(t, "edit", res, http.StatusSeeOther)
	if s := e.app.MCP.Servers()[1]; s.URL != "https://search.example/mcp?key=topsecret-query" || s.Headers["Authorization"] != "Bearer topsecret-header" || s.CallTimeout.String() != "1m0s" {
		t.Fatalf("after the edit: %+v", s)
	}

	for _, bad := range []url.Values{
		{"name": {"docs"}, "transport": {"http"}, "url": {"https://x.example/mcp"}},
		{"name": {"new"}, "transport": {"http"}, "url": {"https://x.example/mcp"}, "headers": {"X-Key:"}},
	} {
		res, body = admin.form("/settings/mcp", bad)
		wantStatus(t, "refused", res, http.StatusBadRequest)
		wantBody(t, "refused", body, `role="alert"`)
	}
	res, _ = admin.form("/settings/mcp/docs/delete", nil)
	wantStatus(t, "remove the file's server", res, http.StatusBadRequest)
	res, _ = bob.form("/settings/mcp/search/delete", nil)
	wantStatus(t, "a user removes", res, http.StatusForbidden)

	res, _ = admin.form("/settings/mcp/search/delete", nil)
	wantStatus(t, "remove", res, http.StatusSeeOther)
	_, body = admin.get("/settings")
	if strings.Contains(body, `data-server="search"`) || len(e.app.MCP.Servers()) != 1 {
		t.Fatal("the removed server is still configured")
	}
}
