package app

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/models"
	"harness/internal/routes"
	"harness/internal/secrets"
)

// logBuffer collects log lines from every goroutine of an app.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A route's API key is stored sealed, works again after a restart on the
// same data directory (key file), is migrated when an older version left
// it in plain text, and under another HARNESS_SECRET_KEY makes the route
// unusable — logged, by name — without stopping the server.
func TestStoredRouteKeysAcrossRestarts(t *testing.T) {
	t.Parallel()
	srv := fake.NewServer(fake.Script{Responder: func(fake.Recorded) fake.Reply { return fake.Reply{Text: "ok"} }})
	base := srv.Start(t)
	cfg := testConfig(t)
	ctx := t.Context()
	noEnv := func(string) string { return "" }
	const apiKey, legacyKey = "sk-route-secret-0123456789", "sk-legacy-plain-9876543210"

	start := func(t *testing.T, getenv func(string) string) (*App, *logBuffer) {
		t.Helper()
		logs := &logBuffer{}
		a, err := New(ctx, slog.New(slog.NewTextHandler(logs, nil)), cfg, Options{Getenv: getenv})
		if err != nil {
			t.Fatalf("New: %v (log: %s)", err, logs)
		}
		return a, logs
	}
	stop := func(t *testing.T, a *App) {
		t.Helper()
		if err := a.Close(ctx); err != nil {
			t.Fatalf("close: %v", err)
		}
	}
	// authOf sends one request through the live route and returns the
	// Authorization header the model server saw.
	authOf := func(t *testing.T, a *App, name string) string {
		t.Helper()
		p, ok := a.Providers.Get(name)
		if !ok {
			t.Fatalf("route %s is not registered", name)
		}
		req := llm.Request{
			CallConfig: llm.CallConfig{Provider: name, Model: "m"},
			Messages:   []llm.Message{llm.UserText("hi", llm.Source{Kind: llm.SourceUser})},
		}
		if err := p.Stream(ctx, req, func(llm.Chunk) error { return nil }); err != nil {
			t.Fatalf("request through %s: %v", name, err)
		}
		recs := srv.Requests()
		return recs[len(recs)-1].Header.Get("Authorization")
	}
	keyFile := filepath.Join(cfg.DataDir, secrets.FileName)

	// First start: a key file is created; an admin saves a route.
	a, logs := start(t, noEnv)
	if _, err := a.Routes.Save(ctx, routes.Form{Name: "local", Kind: "openai", BaseURL: base, APIKey: apiKey, Models: "m", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	stop(t, a)
	if !strings.Contains(logs.String(), `msg="secret key ready" source="new key file `+keyFile+`"`) {
		t.Fatalf("the first start does not say it created the key file: %s", logs)
	}
	if st, err := os.Stat(keyFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", st, err)
	}
	if st, err := os.Stat(cfg.DBDSN); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("database file: %v, %v", st, err)
	}
	if db, err := os.ReadFile(cfg.DBDSN); err != nil || bytes.Contains(db, []byte(apiKey)) {
		t.Fatalf("the database file holds the API key in clear (read error %v)", err)
	}

	// An older version left a route key in plain text.
	db, err := models.Open(ctx, nil, models.Config{DSN: cfg.DBDSN})
	if err != nil {
		t.Fatal(err)
	}
	err = db.W.Exec(`INSERT INTO provider_configs (name, kind, base_url, api_key, default_model, models, enabled, updated_at)
		VALUES ('legacy', 'openai', ?, ?, 'm', '["m"]', ?, ?)`, base, legacyKey, true, time.Now()).Error
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}

	// Restart on the same data directory: both routes work, the plain key
	// is sealed.
	a, logs = start(t, noEnv)
	if got := authOf(t, a, "local"); got != "Bearer "+apiKey {
		t.Fatalf("after a restart the route sends %q", got)
	}
	if got := authOf(t, a, "legacy"); got != "Bearer "+legacyKey {
		t.Fatalf("the migrated route sends %q", got)
	}
	stop(t, a)
	out := logs.String()
	if !strings.Contains(out, `source="key file `+keyFile+`" sealed_plaintext_keys=1`) {
		t.Fatalf("the restart does not log the key file and one migrated key: %s", out)
	}
	if db, _ := os.ReadFile(cfg.DBDSN); bytes.Contains(db, []byte(legacyKey)) {
		t.Fatal("the legacy key is still in clear in the database file")
	}

	// Another secret key: the server starts, the routes are reported
	// unusable by name, and no secret reaches the log.
	b := make([]byte, secrets.KeySize)
	_, _ = rand.Read(b)
	otherKey := hex.EncodeToString(b)
	a, logs = start(t, func(k string) string {
		if k == secrets.EnvVar {
			return otherKey
		}
		return ""
	})
	defer stop(t, a)
	for _, name := range []string{"local", "legacy"} {
		if _, ok := a.Providers.Get(name); ok {
			t.Fatalf("route %s is registered though its key cannot be opened", name)
		}
	}
	out = logs.String()
	for _, want := range []string{`source=` + secrets.EnvVar, "name=local", "name=legacy", "unusable until its API key is entered again", secrets.ErrCannotOpen.Error()} {
		if !strings.Contains(out, want) {
			t.Fatalf("log lacks %q: %s", want, out)
		}
	}
	fileKey, _ := os.ReadFile(keyFile)
	for _, secret := range []string{apiKey, legacyKey, otherKey, strings.TrimSpace(string(fileKey))} {
		if strings.Contains(out, secret) {
			t.Fatalf("a secret reached the log: %s", out)
		}
	}
	// The admin can repair the route by entering the key again.
	if _, err := a.Routes.Save(ctx, routes.Form{Name: "local", Kind: "openai", BaseURL: base, APIKey: apiKey, Models: "m", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if got := authOf(t, a, "local"); got != "Bearer "+apiKey {
		t.Fatalf("after re-entering the key the route sends %q", got)
	}
}
