package config

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"harness/internal/sandbox"
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
				wd, _ := os.Getwd()
				if c.Addr != "127.0.0.1:8080" || c.DataDir != filepath.Join(wd, "data") || c.DBDriver != "sqlite" {
					t.Fatalf("defaults: %+v", c)
				}
				if c.DBDSN != filepath.Join(wd, "data", "harness.db") {
					t.Fatalf("sqlite dsn = %q", c.DBDSN)
				}
				if c.Sandbox.Mode != sandbox.ModeAuto || c.ForkCopyMax != DefaultForkCopyMax || len(c.WorkspaceRoots) != 0 || c.AttachmentMax != 10<<20 || c.TrustedProxies != nil {
					t.Fatalf("sandbox defaults: %+v", c)
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
		{
			name: "drain period and replica id: defaults by driver",
			env:  map[string]string{"HARNESS_DATA_DIR": "/tmp/h"},
			check: func(t *testing.T, c Config) {
				if c.DrainPeriod != 0 {
					t.Errorf("SQLite drain period %v, want none", c.DrainPeriod)
				}
				if c.Replica.ID != DefaultReplicaID("/tmp/h", "127.0.0.1:8080") || c.Replica.ID == DefaultReplicaID("/tmp/h", "127.0.0.1:8081") {
					t.Errorf("replica id %q: want the default of this data directory and address, distinct per address", c.Replica.ID)
				}
			},
		},
		{
			name: "drain period and replica id: PostgreSQL",
			env:  map[string]string{"HARNESS_DB_DRIVER": "postgres", "HARNESS_DB_DSN": "host=db"},
			check: func(t *testing.T, c Config) {
				if c.DrainPeriod != DefaultDrainPeriod {
					t.Errorf("PostgreSQL drain period %v, want %v", c.DrainPeriod, DefaultDrainPeriod)
				}
			},
		},
		{
			name: "drain period and replica id: set",
			args: []string{"-drain-period", "1s"},
			env:  map[string]string{"HARNESS_REPLICA_ID": "web-1"},
			check: func(t *testing.T, c Config) {
				if c.DrainPeriod != time.Second || c.Replica.ID != "web-1" {
					t.Errorf("drain period %v, replica id %q; want 1s and web-1", c.DrainPeriod, c.Replica.ID)
				}
			},
		},
		{
			name: "heartbeat and stale bound: defaults, and clamped to the TTL",
			env:  map[string]string{"HARNESS_LEASE_TTL": "900ms"},
			check: func(t *testing.T, c Config) {
				if c.Replica.Heartbeat != DefaultHeartbeat || c.Replica.StaleAfter != DefaultStaleAfter {
					t.Errorf("heartbeat %v, stale after %v; want the defaults", c.Replica.Heartbeat, c.Replica.StaleAfter)
				}
				if every, stale := c.Replica.Beat(); every != 300*time.Millisecond || stale != 900*time.Millisecond {
					t.Errorf("beat %v, stale %v under a 900ms TTL; want 300ms and 900ms", every, stale)
				}
			},
		},
		{
			name: "heartbeat and stale bound: set",
			args: []string{"-replica-stale-after", "3s"},
			env:  map[string]string{"HARNESS_REPLICA_HEARTBEAT": "1s", "HARNESS_REPLICA_STALE_AFTER": "9s"},
			check: func(t *testing.T, c Config) {
				if every, stale := c.Replica.Beat(); every != time.Second || stale != 3*time.Second {
					t.Errorf("beat %v, stale %v; want 1s and 3s (the flag wins)", every, stale)
				}
			},
		},
		{
			name:    "stale bound under three heartbeats",
			env:     map[string]string{"HARNESS_REPLICA_HEARTBEAT": "1s", "HARNESS_REPLICA_STALE_AFTER": "2s"},
			wantErr: "at least three heartbeats",
		},
		{
			name:    "heartbeat too short",
			env:     map[string]string{"HARNESS_REPLICA_HEARTBEAT": "10ms"},
			wantErr: "replica heartbeat",
		},
		{
			name:    "heartbeat unparsable",
			env:     map[string]string{"HARNESS_REPLICA_HEARTBEAT": "soon"},
			wantErr: "HARNESS_REPLICA_HEARTBEAT",
		},
		{
			name:    "negative drain period",
			env:     map[string]string{"HARNESS_DRAIN_PERIOD": "-1s"},
			wantErr: "drain period",
		},
		{
			name: "sandbox, roots, git hosts and fork cap",
			env: map[string]string{
				"HARNESS_DATA_DIR":         "rel/dir",
				"HARNESS_SANDBOX":          "landlock",
				"HARNESS_SANDBOX_READONLY": "/opt/tools:/srv/ref",
				"HARNESS_SANDBOX_LIMITS":   "cpu=30,mem=1G,procs=64,fsize=10M,files=256,disk=5G",
				"HARNESS_WORKSPACE_ROOTS":  "/srv/projects; /srv/team?users=alice,bob&shared=1",
				"HARNESS_GIT_HOSTS":        "github.com, git.example.com:8443",
				"HARNESS_FORK_COPY_MAX":    "256M",
				"HARNESS_ATTACHMENT_MAX":   "2M",
			},
			check: func(t *testing.T, c Config) {
				wd, _ := os.Getwd()
				if c.DataDir != filepath.Join(wd, "rel", "dir") {
					t.Errorf("data dir %q is not absolute", c.DataDir)
				}
				want := sandbox.Limits{CPUSeconds: 30, MemoryBytes: 1 << 30, Processes: 64, FileSizeBytes: 10 << 20, OpenFiles: 256, DiskBytes: 5 << 30}
				if c.Sandbox.Mode != sandbox.ModeLandlock || c.Sandbox.Limits != want || strings.Join(c.Sandbox.ReadOnly, " ") != "/opt/tools /srv/ref" {
					t.Errorf("sandbox %+v", c.Sandbox)
				}
				if len(c.WorkspaceRoots) != 2 || c.WorkspaceRoots[0].Path != "/srv/projects" || c.WorkspaceRoots[0].Shared ||
					c.WorkspaceRoots[1].Path != "/srv/team" || strings.Join(c.WorkspaceRoots[1].Users, ",") != "alice,bob" || !c.WorkspaceRoots[1].Shared {
					t.Errorf("roots %+v", c.WorkspaceRoots)
				}
				if strings.Join(c.GitHosts, " ") != "github.com git.example.com:8443" || c.ForkCopyMax != 256<<20 || c.AttachmentMax != 2<<20 {
					t.Errorf("git hosts %q, fork cap %d", c.GitHosts, c.ForkCopyMax)
				}
			},
		},
		{
			name: "trusted proxies",
			env:  map[string]string{"HARNESS_TRUSTED_PROXIES": " 127.0.0.1/32, 10.1.2.3/8,::1, 192.0.2.7 ,::ffff:198.51.100.0/120"},
			check: func(t *testing.T, c Config) {
				got := fmt.Sprint(c.TrustedProxies)
				if want := "[127.0.0.1/32 10.0.0.0/8 ::1/128 192.0.2.7/32 198.51.100.0/24]"; got != want {
					t.Errorf("trusted proxies %s, want %s", got, want)
				}
			},
		},
		{name: "bad proxy CIDR", env: map[string]string{"HARNESS_TRUSTED_PROXIES": "10.0.0.0/33"}, wantErr: `HARNESS_TRUSTED_PROXIES: "10.0.0.0/33": want a CIDR`},
		{name: "proxy by name", env: map[string]string{"HARNESS_TRUSTED_PROXIES": "127.0.0.1, nginx.local"}, wantErr: `"nginx.local"`},
		{name: "proxy with a port", env: map[string]string{"HARNESS_TRUSTED_PROXIES": "127.0.0.1:8080"}, wantErr: "HARNESS_TRUSTED_PROXIES"},
		{name: "bad sandbox mode", env: map[string]string{"HARNESS_SANDBOX": "maybe"}, wantErr: "HARNESS_SANDBOX"},
		{name: "bad sandbox user", env: map[string]string{"HARNESS_SANDBOX_USER": "root"}, wantErr: "HARNESS_SANDBOX_USER"},
		{name: "bad limits", env: map[string]string{"HARNESS_SANDBOX_LIMITS": "cpu=lots"}, wantErr: "HARNESS_SANDBOX_LIMITS"},
		{name: "unknown limit", env: map[string]string{"HARNESS_SANDBOX_LIMITS": "gpu=1"}, wantErr: "unknown limit"},
		{name: "relative root", env: map[string]string{"HARNESS_WORKSPACE_ROOTS": "projects"}, wantErr: "absolute"},
		{name: "bad root option", env: map[string]string{"HARNESS_WORKSPACE_ROOTS": "/srv?who=me"}, wantErr: "unknown option"},
		{name: "bad fork cap", env: map[string]string{"HARNESS_FORK_COPY_MAX": "big"}, wantErr: "HARNESS_FORK_COPY_MAX"},
		{name: "bad image cap", env: map[string]string{"HARNESS_ATTACHMENT_MAX": "lots"}, wantErr: "HARNESS_ATTACHMENT_MAX"},
		{name: "image cap over the bound", env: map[string]string{"HARNESS_ATTACHMENT_MAX": "65M"}, wantErr: "attachment cap"},
		{name: "zero image cap", env: map[string]string{"HARNESS_ATTACHMENT_MAX": "0"}, wantErr: "attachment cap"},
		{name: "bad addr", env: map[string]string{"HARNESS_ADDR": "nope"}, wantErr: "addr"},
		{name: "postgres without dsn", env: map[string]string{"HARNESS_DB_DRIVER": "postgres"}, wantErr: "HARNESS_DB_DSN"},
		{name: "unknown driver", args: []string{"-db-driver", "mysql"}, wantErr: "mysql"},
		{name: "bad origin", env: map[string]string{"HARNESS_TRUSTED_ORIGINS": "example.com"}, wantErr: "trusted origin"},
		{name: "bad level", env: map[string]string{"HARNESS_LOG_LEVEL": "loud"}, wantErr: "log level"},
		{
			name: "metrics token",
			env:  map[string]string{"HARNESS_METRICS_TOKEN": "0123456789abcdef"},
			check: func(t *testing.T, c Config) {
				if c.MetricsToken != "0123456789abcdef" {
					t.Fatalf("metrics token not read")
				}
			},
		},
		// The refusal never repeats the token.
		{name: "short metrics token", env: map[string]string{"HARNESS_METRICS_TOKEN": "tiny-secret"}, wantErr: "HARNESS_METRICS_TOKEN: at least 16 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Load(tt.args, env(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				if tok := tt.env["HARNESS_METRICS_TOKEN"]; tok != "" && strings.Contains(err.Error(), tok) {
					t.Fatalf("the error repeats the metrics token: %v", err)
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

func TestParseSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"0": 0, "512": 512, "4K": 4096, "10m": 10 << 20, "2G": 2 << 30, "1GB": 1 << 30, "1T": 1 << 40} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "1.5G", "12Q", "G"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q): no error", bad)
		}
	}
}
