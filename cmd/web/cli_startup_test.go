package main

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"harness/internal/auth"
	"harness/internal/models"
)

func TestStartAuth(t *testing.T) {
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
			cfg := cliConfig(t)
			cfg.Addr, cfg.AdminPassword = tt.addr, tt.adminPW
			db, err := models.Open(t.Context(), nil, models.Config{DSN: cfg.DBDSN})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var logs bytes.Buffer
			svc, err := startAuth(t.Context(), slog.New(slog.NewTextHandler(&logs, nil)), cfg, db)
			if tt.wantErr == nil && (err != nil || svc == nil) || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("startAuth = %v, want %v", err, tt.wantErr)
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
