package app

import (
	"bytes"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"harness/internal/auth"
	"harness/internal/config"
)

func testConfig(t *testing.T) config.Config {
	t.Helper()
	dir := t.TempDir()
	return config.Config{
		Addr: "127.0.0.1:0", DataDir: dir, DBDriver: "sqlite", DBDSN: filepath.Join(dir, "harness.db"),
		ShutdownTimeout: 5e9,
	}
}

func TestStart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, addr, adminPW string
		wantErr             error
		wantLog             string // substring of the log ("" = no setup link)
	}{
		{"loopback, no password: setup link", "127.0.0.1:8080", "", nil, "url=http://127.0.0.1:8080/setup/"},
		{"loopback, admin password", "127.0.0.1:8080", "admin-password", nil, ""},
		{"exposed, admin password", "0.0.0.0:8080", "admin-password", nil, ""},
		{"exposed, no users", "0.0.0.0:8080", "", auth.ErrExposed, "url=http://127.0.0.1:8080/setup/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			cfg.Addr, cfg.AdminPassword = tt.addr, tt.adminPW
			var logs bytes.Buffer
			a, err := New(t.Context(), slog.New(slog.NewTextHandler(&logs, nil)), cfg, Options{Getenv: func(string) string { return "" }})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close(t.Context())
			err = a.Start(t.Context())
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Start = %v, want %v", err, tt.wantErr)
			}
			if got := logs.String(); tt.wantLog == "" && strings.Contains(got, "/setup/") || !strings.Contains(got, tt.wantLog) {
				t.Fatalf("log %q, want %q", got, tt.wantLog)
			}
			if tt.adminPW != "" && strings.Contains(logs.String(), tt.adminPW) {
				t.Fatal("the admin password reached the log")
			}
		})
	}
}

func TestSetupURL(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080/setup/x",
		"0.0.0.0:9000":   "http://127.0.0.1:9000/setup/x",
		"[::]:80":        "http://127.0.0.1:80/setup/x",
		"example.org:1":  "http://example.org:1/setup/x",
	} {
		if got := setupURL(addr, "/setup/x"); got != want {
			t.Errorf("%s: %s, want %s", addr, got, want)
		}
	}
}
