package main

import (
	"os"
	"testing"
	"time"

	"harness/client"
	"harness/internal/auth"
	"harness/internal/models"
	"harness/internal/testkit/poll"
	"harness/internal/ws"
)

// On PostgreSQL a token revoked with the CLI, a process of its own, cuts
// the running server's socket that uses it at once (close 4401), not at
// the socket's next keepalive (20 s).
func TestCLIRevocationReachesTheServer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns a server; skipped with -short")
	}
	if os.Getenv(pgDSNEnv) == "" {
		t.Skip("!!! SKIPPING: the CLI tells running servers through PostgreSQL; set " + pgDSNEnv + " (.ci/run does) !!!")
	}
	b := backends(t)[1].make(t)
	dir := t.TempDir()
	tok := b.token(t, dir)
	srv := startServer(t, dir, b.env...)
	ctx := t.Context()
	c := client.New(srv.URL, client.WithToken(tok))
	s, err := c.CreateSession(ctx, client.NewSession{Title: "revoked from the CLI"})
	if err != nil {
		t.Fatal(err)
	}
	cn, err := c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cn.Close() })
	if _, err := cn.Subscribe(ctx, s.ID, -1); err != nil {
		t.Fatal(err)
	}

	cfg := cliConfigAt(t, dir)
	cfg.DBDriver, cfg.DBDSN = "postgres", b.dsn
	var tokenID string
	withService(t, cfg, func(svc *auth.Service, _ *models.DB) {
		ts, err := svc.ListTokens(ctx, "replica")
		if err != nil || len(ts) != 1 {
			t.Fatalf("tokens %+v, %v", ts, err)
		}
		tokenID = ts[0].ID
	})
	if r := runCLI(t, cfg, "", "token", "revoke", "replica", tokenID); r.err != nil {
		t.Fatalf("token revoke: %v %s", r.err, r.errOut)
	}
	poll.Eventually(t, "the server to close the socket", func() bool {
		select {
		case <-cn.Done():
			return true
		default:
			return false
		}
	}, poll.Within(3*time.Second))
	if st := client.CloseStatus(cn.Err()); st != int(ws.CloseRevoked) {
		t.Fatalf("socket ended with %v, want close %d", cn.Err(), ws.CloseRevoked)
	}
}
