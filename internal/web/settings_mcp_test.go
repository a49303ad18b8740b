package web_test

import (
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
