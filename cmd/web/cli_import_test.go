package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"harness/client"
	"harness/internal/auth"
	"harness/internal/models"
	"harness/internal/testkit/poll"
)

const corpusDir = "/work/shared/corpus/dsh-sessions"

var importedLine = regexp.MustCompile(`^(\S+): imported as ([0-9a-f-]{36}) "(.*)"$`)

// import FILE... --owner NAME: one line per file, an error when one
// failed, the good one stored as the owner's; then the server loads it and
// a new turn runs on it.
func TestCLIImport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := cliConfigAt(t, dir)
	token := userToken(t, dir, "alice", false)
	good := filepath.Join(corpusDir, "examples--acp-agent--bash-tool-turn--session.jsonl")
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"type":"session","version":0,"id":"x","createdAt":1}
{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}
{"type":"turn/end","seq":2,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}
`), 0o600); err != nil {
		t.Fatal(err)
	}

	r := runCLI(t, cfg, "", "import", good, bad, "--owner", "alice")
	if !r.handled || r.err == nil || !strings.Contains(r.err.Error(), "1 of 2 file(s) failed") {
		t.Fatalf("handled=%v err=%v stderr=%s", r.handled, r.err, r.errOut)
	}
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if len(lines) != 2 {
		t.Fatalf("output %q: want one line per file", r.out)
	}
	m := importedLine.FindStringSubmatch(lines[0])
	if m == nil || m[1] != good || m[3] != "Use the bash tool to" {
		t.Fatalf("first line %q", lines[0])
	}
	id := m[2]
	if want := bad + ": failed: line 3: seq gap: expected seq 1, got 2"; lines[1] != want {
		t.Fatalf("second line %q, want %q", lines[1], want)
	}

	// Stored as alice's, with its whole log; nothing of the bad file.
	withService(t, cfg, func(svc *auth.Service, db *models.DB) {
		u, err := svc.GetUser(t.Context(), "alice")
		if err != nil {
			t.Fatal(err)
		}
		var rows []models.Session
		if err := db.R.Find(&rows).Error; err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0].ID != id || rows[0].OwnerID != u.ID || rows[0].Head != 102 || rows[0].SeedLength != 102 {
			t.Fatalf("rows %+v", rows)
		}
		var n int64
		if err := db.R.Model(&models.LogRow{}).Where("log_key = (SELECT log_key FROM sessions WHERE id = ?)", id).Select("COALESCE(SUM(n), 0)").Scan(&n).Error; err != nil || n != 103 {
			t.Fatalf("%d events stored (%v)", n, err)
		}
	})

	// Usage and refusals.
	for _, args := range [][]string{{"import"}, {"import", good}, {"import", "--owner", "alice"}, {"import", good, "--bogus"}} {
		if r := runCLI(t, cfg, "", args...); !errors.Is(r.err, errUsage) || !strings.Contains(r.errOut, "import FILE... --owner NAME") {
			t.Errorf("%q: err=%v stderr=%q", args, r.err, r.errOut)
		}
	}
	if r := runCLI(t, cfg, "", "import", good, "--owner", "nobody"); r.err == nil || !strings.Contains(r.err.Error(), "owner nobody") {
		t.Errorf("unknown owner: %v", r.err)
	}
	db, err := models.Open(t.Context(), nil, models.Config{DSN: filepath.Join(dir, "harness.db")})
	if err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, cfg, "", "import", good, "--owner", "alice")
	db.Close()
	if !errors.Is(r.err, models.ErrLocked) || !strings.Contains(r.err.Error(), "stop it first") {
		t.Fatalf("with the database held: %v", r.err)
	}

	// The server loads the imported session and continues it.
	srv := startServer(t, dir)
	c := client.New(srv.URL, client.WithToken(token))
	s, err := c.GetSession(t.Context(), id)
	if err != nil || s.Title != "Use the bash tool to" || s.Role != "owner" {
		t.Fatalf("session %+v %v", s, err)
	}
	if _, err := c.SendMessage(t.Context(), id, "what did it print?", "followup"); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "the new turn", func() bool {
		evs := events(t, c, id)
		last := evs[len(evs)-1]
		return last.Type == "turn/end" && strings.Contains(string(last.Data), `"turn":2`)
	}, poll.Within(30*time.Second))
}
