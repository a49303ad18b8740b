package mcp_test

import (
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"harness/internal/mcp"
	"harness/internal/models"
	"harness/internal/secrets"
	"harness/internal/tools"
)

// settingsStore is a real SettingsStore on a fresh SQLite file, with a
// fresh secret key.
func settingsStore(t *testing.T) (*models.SettingsStore, *models.DB) {
	t.Helper()
	db, err := models.Open(t.Context(), slog.New(slog.DiscardHandler), models.Config{DSN: filepath.Join(t.TempDir(), "h.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return withKey(t, db), db
}

// withKey is a SettingsStore on db sealing with a fresh key.
func withKey(t *testing.T, db *models.DB) *models.SettingsStore {
	t.Helper()
	sealer, err := secrets.NewSealer(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	return models.NewSettingsStore(db, sealer)
}

func names(defs []tools.Definition) []string {
	var out []string
	for _, d := range defs {
		out = append(out, d.Name)
	}
	slices.Sort(out)
	return out
}

// Servers added in Settings: stored with their secrets sealed, applied at
// once to a live session's set (which keeps the connections of servers
// that did not change), edited with write-only values, removed; the
// config file's servers cannot be changed; another manager on the same
// store (a replica) sees them after Load.
func TestSettingsServers(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store, _ := settingsStore(t)
	p := newServer(t)
	file := mcp.Config{Servers: []mcp.Server{{Name: "docs", URL: "https://docs.example/mcp", CallTimeout: mcp.DefaultCallTimeout, StartTimeout: mcp.DefaultStartTimeout}}}
	m := mcp.New(file, mcp.Options{Dial: p.dial, Store: store})
	if err := m.Load(ctx); err != nil {
		t.Fatal(err)
	}
	set := m.Open("s1", t.TempDir(), nil)
	t.Cleanup(set.Close)
	defs, v1 := set.Tools(ctx)
	if got := names(defs); !slices.Contains(got, "docs__echo") || slices.ContainsFunc(got, func(n string) bool { return strings.HasPrefix(n, "extra__") }) {
		t.Fatalf("tools before: %v", got)
	}
	dials := p.dialCount()

	add := mcp.Form{Name: "extra", Transport: "http", URL: "https://extra.example/mcp?token=q-secret", Headers: "Authorization: Bearer h-secret\nX-Team: blue", ReadOnly: true}
	if err := m.Save(ctx, add); err != nil {
		t.Fatal(err)
	}
	defs, v2 := set.Tools(ctx)
	if !slices.Contains(names(defs), "extra__echo") || v2 == v1 {
		t.Fatalf("after adding: %v (version %d, was %d)", names(defs), v2, v1)
	}
	if d := byName(defs)["extra__echo"]; d.Access != tools.AccessRead {
		t.Fatalf("a read-only server's tool has access %q", d.Access)
	}
	if got := p.dialCount(); got != dials+1 {
		t.Fatalf("%d dials after adding a server, want %d (docs keeps its connection)", got, dials+1)
	}
	rows, err := store.MCPServers(ctx)
	if err != nil || len(rows) != 1 || rows[0].Secrets["header:Authorization"] != "Bearer h-secret" || strings.Contains(rows[0].Spec, "secret") {
		t.Fatalf("stored %+v, %v", rows, err)
	}
	views, err := m.Stored(ctx)
	if err != nil || len(views) != 1 || views[0].URL != "https://extra.example/mcp" || !slices.Equal(views[0].HeaderNames, []string{"Authorization", "X-Team"}) {
		t.Fatalf("the edit form's view %+v, %v", views, err)
	}

	// An empty value (and an empty URL) keeps the stored one: nothing
	// changed, no reconnect.
	same := add
	same.URL, same.Headers = "", "Authorization:\nX-Team:"
	if err := m.Save(ctx, same); err != nil {
		t.Fatal(err)
	}
	if _, v := set.Tools(ctx); v != v2 || p.dialCount() != dials+1 {
		t.Fatalf("an unchanged edit changed the tools (version %d, was %d) or reconnected (%d dials)", v, v2, p.dialCount())
	}
	// A new value reconnects; a header left out is removed.
	changed := add
	changed.Headers = "Authorization: Bearer h-secret-2"
	if err := m.Save(ctx, changed); err != nil {
		t.Fatal(err)
	}
	set.Tools(ctx)
	if got := p.dialCount(); got != dials+2 {
		t.Fatalf("%d dials after a new header value, want %d", got, dials+2)
	}
	rows, _ = store.MCPServers(ctx)
	if _, ok := rows[0].Secrets["header:X-Team"]; ok || rows[0].Secrets["header:Authorization"] != "Bearer h-secret-2" {
		t.Fatalf("secrets after the edit: %v", rows[0].Secrets)
	}

	// Refusals: the file's name, a first value missing, bad input. Their
	// messages quote no value.
	for _, f := range []mcp.Form{
		{Name: "docs", Transport: "http", URL: "https://x.example/mcp"},
		{Name: "DOCS", Transport: "http", URL: "https://x.example/mcp"},
		{Name: "new", Transport: "http", URL: "https://x.example/mcp", Headers: "Authorization:"},
		{Name: "new", Transport: "http", URL: "ftp://x.example"},
		{Name: "new", Transport: "stdio"},
		{Name: "bad_name", Transport: "stdio", Command: "node"},
		{Name: "new", Transport: "stdio", Command: "node", ReadOnlyPaths: "relative/path"},
		{Name: "new", Transport: "stdio", Command: "node", Env: "1BAD=v-secret"},
		{Name: "new", Transport: "stdio", Command: "node", Timeout: "soon"},
	} {
		err := m.Save(ctx, f)
		msg := mcp.InputMessage(err)
		if msg == "" || strings.Contains(msg, "secret") {
			t.Errorf("form %+v: %v (message %q)", f, err, msg)
		}
	}
	if err := m.Delete(ctx, "docs"); mcp.InputMessage(err) == "" {
		t.Fatalf("removing the file's server: %v", err)
	}
	if st := m.Status(); len(st) != 2 || st[0].Origin != mcp.OriginFile || st[1].Origin != mcp.OriginSettings || st[1].Name != "extra" {
		t.Fatalf("status %+v", st)
	}

	// A replica on the same store sees the server once it loads.
	other := mcp.New(file, mcp.Options{Dial: p.dial, Store: store})
	if err := other.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if got := other.Servers(); len(got) != 2 || got[1].Headers["Authorization"] != "Bearer h-secret-2" || got[1].URL != add.URL {
		t.Fatalf("the other manager's servers: %+v", got)
	}

	// Removed: its tools go, and the header is the one from before.
	if err := m.Delete(ctx, "extra"); err != nil {
		t.Fatal(err)
	}
	defs, v3 := set.Tools(ctx)
	if slices.Contains(names(defs), "extra__echo") || v3 != v1 {
		t.Fatalf("after removing: %v (version %d, want %d)", names(defs), v3, v1)
	}
}

// A stored server whose secrets cannot be opened (the secret key changed)
// is left out and shown with the reason; the others apply.
func TestSettingsServerWithUnreadableSecrets(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store, db := settingsStore(t)
	p := newServer(t)
	m := mcp.New(mcp.Config{}, mcp.Options{Dial: p.dial, Store: store})
	for _, f := range []mcp.Form{
		{Name: "a", Transport: "http", URL: "https://a.example/mcp", Headers: "Authorization: Bearer x"},
		{Name: "b", Transport: "stdio", Command: "node", Args: "/opt/b.js\n."},
	} {
		if err := m.Save(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	// The same database read with another key.
	other := mcp.New(mcp.Config{}, mcp.Options{Dial: p.dial, Store: withKey(t, db)})
	if err := other.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if got := other.Servers(); len(got) != 1 || got[0].Name != "b" || got[0].Target() != "node /opt/b.js ." {
		t.Fatalf("servers with an unreadable secret: %+v", got)
	}
	views, err := other.Stored(ctx)
	if err != nil || len(views) != 2 || views[0].Error == "" || views[1].Error != "" || !slices.Equal(views[0].HeaderNames, []string{"Authorization"}) {
		t.Fatalf("stored views %+v, %v", views, err)
	}
}
