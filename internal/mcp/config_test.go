package mcp_test

import (
	"strings"
	"testing"
	"time"

	"harness/internal/mcp"
)

func TestParseConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{"MCP_TOKEN": "s3cret", "FS_KEY": "k"}
	getenv := func(k string) string { return env[k] }
	cases := []struct {
		name, json string
		wantErr    string // "" = valid
		check      func(t *testing.T, c mcp.Config)
	}{
		{name: "empty", json: `{}`, check: func(t *testing.T, c mcp.Config) {
			if len(c.Servers) != 0 {
				t.Fatal(c.Servers)
			}
		}},
		{name: "stdio and http, sorted by name", json: `{"servers": {
			"web": {"url": "https://mcp.example.com/mcp?key=abc", "headers": {"Authorization": "Bearer ${MCP_TOKEN}"}, "timeout": "90s"},
			"fs": {"command": "node", "args": ["/opt/fs/index.js", "."], "env": {"KEY": "${FS_KEY}", "MODE": "$literal"}, "envAllow": ["LANG"], "readOnlyPaths": ["/opt/fs"], "readOnly": true}
		}}`, check: func(t *testing.T, c mcp.Config) {
			if len(c.Servers) != 2 || c.Servers[0].Name != "fs" || c.Servers[1].Name != "web" {
				t.Fatalf("%+v", c.Servers)
			}
			fs, web := c.Servers[0], c.Servers[1]
			if fs.Transport() != "stdio" || !fs.ReadOnly || fs.Env["KEY"] != "k" || fs.Env["MODE"] != "$literal" || fs.CallTimeout != mcp.DefaultCallTimeout {
				t.Errorf("fs %+v", fs)
			}
			if web.Transport() != "http" || web.Headers["Authorization"] != "Bearer s3cret" || web.CallTimeout != 90*time.Second {
				t.Errorf("web %+v", web)
			}
			if got := web.Target(); got != "https://mcp.example.com/mcp" {
				t.Errorf("target %q shows the query", got)
			}
		}},
		{name: "underscore in the name", json: `{"servers": {"my_srv": {"command": "x"}}}`, wantErr: "name must match"},
		{name: "both transports", json: `{"servers": {"a": {"command": "x", "url": "https://h/"}}}`, wantErr: "not both"},
		{name: "neither transport", json: `{"servers": {"a": {}}}`, wantErr: "set command"},
		{name: "unknown field", json: `{"servers": {"a": {"command": "x", "cmd": "y"}}}`, wantErr: "unknown field"},
		{name: "missing secret", json: `{"servers": {"a": {"url": "https://h/", "headers": {"X-Key": "${NOPE}"}}}}`, wantErr: "NOPE is not set"},
		{name: "relative read-only path", json: `{"servers": {"a": {"command": "x", "readOnlyPaths": ["opt"]}}}`, wantErr: "not absolute"},
		{name: "bad timeout", json: `{"servers": {"a": {"command": "x", "timeout": "soon"}}}`, wantErr: "positive duration"},
		{name: "headers on stdio", json: `{"servers": {"a": {"command": "x", "headers": {"A": "b"}}}}`, wantErr: "for HTTP servers"},
		{name: "not http", json: `{"servers": {"a": {"url": "ftp://h/"}}}`, wantErr: "http or https"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := mcp.ParseConfig([]byte(tc.json), getenv)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Fatal("the error quotes a secret")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}
