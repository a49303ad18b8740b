package config

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
)

func env(m map[string]string) Getenv { return func(k string) string { return m[k] } }

func TestLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(t *testing.T, c Config)
		wantErr string
	}{
		{
			name: "defaults",
			check: func(t *testing.T, c Config) {
				if c.Addr != "127.0.0.1:8080" || c.DataDir != "data" || c.DBDriver != "sqlite" {
					t.Fatalf("defaults: %+v", c)
				}
				if c.DBDSN != filepath.Join("data", "harness.db") {
					t.Fatalf("sqlite dsn = %q", c.DBDSN)
				}
				if !c.Loopback() {
					t.Fatal("default addr must be loopback")
				}
			},
		},
		{
			name: "env then flags win",
			args: []string{"-addr", "127.0.0.1:9999", "-log-level", "debug"},
			env:  map[string]string{"HARNESS_ADDR": "0.0.0.0:1", "HARNESS_DATA_DIR": "/tmp/h", "HARNESS_TRUSTED_ORIGINS": "https://a.example, https://b.example/"},
			check: func(t *testing.T, c Config) {
				if c.Addr != "127.0.0.1:9999" || c.DataDir != "/tmp/h" || c.LogLevel != slog.LevelDebug {
					t.Fatalf("got %+v", c)
				}
				if strings.Join(c.TrustedOrigins, " ") != "https://a.example https://b.example" {
					t.Fatalf("origins %q", c.TrustedOrigins)
				}
			},
		},
		{name: "bad addr", env: map[string]string{"HARNESS_ADDR": "nope"}, wantErr: "addr"},
		{name: "postgres without dsn", env: map[string]string{"HARNESS_DB_DRIVER": "postgres"}, wantErr: "HARNESS_DB_DSN"},
		{name: "unknown driver", args: []string{"-db-driver", "mysql"}, wantErr: "mysql"},
		{name: "bad origin", env: map[string]string{"HARNESS_TRUSTED_ORIGINS": "example.com"}, wantErr: "trusted origin"},
		{name: "bad level", env: map[string]string{"HARNESS_LOG_LEVEL": "loud"}, wantErr: "log level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Load(tt.args, env(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestLoopback(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:1": true, "[::1]:80": true,
		"0.0.0.0:8080": false, ":8080": false, "10.0.0.1:80": false,
	} {
		if got := (Config{Addr: addr}).Loopback(); got != want {
			t.Errorf("%s: loopback = %v, want %v", addr, got, want)
		}
	}
}
