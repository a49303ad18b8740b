package app_test

import (
	"harness/client"
	"harness/internal/ws"
	"slices"
	"testing"
	"time"

	"harness/internal/mcp"
	"harness/internal/routes"
	"harness/internal/testkit/poll"
)

// An admin changes settings on replica A: a model route and an MCP server
// added there reach replica B without a restart (B reads them again when A
// says so), and so do their removal.
func TestReplicasFollowSettingsChanges(t *testing.T) {
	t.Parallel()
	dsn, _ := pgSchema(t)
	a := replica(t, dsn, "replica-a", time.Minute)
	b := replica(t, dsn, "replica-b", time.Minute)
	ctx := t.Context()

	if _, err := a.Routes.Save(ctx, routes.Form{Name: "team", Kind: "openai", BaseURL: "http://127.0.0.1:1/v1", APIKey: "sk-team-0123456789",
		DefaultModel: "m1", Models: "m1", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if err := a.MCP.Save(ctx, mcp.Form{Name: "search", Transport: "http", URL: "https://search.example/mcp", Headers: "Authorization: Bearer x"}); err != nil {
		t.Fatal(err)
	}
	hasRoute := func() bool { _, ok := b.Routes.Lookup("team"); return ok }
	hasServer := func() bool {
		return slices.ContainsFunc(b.MCP.Servers(), func(s mcp.Server) bool { return s.Name == "search" && s.Headers["Authorization"] == "Bearer x" })
	}
	poll.Eventually(t, "B to apply A's route", hasRoute, poll.Within(10*time.Second))
	poll.Eventually(t, "B to apply A's MCP server", hasServer, poll.Within(10*time.Second))

	if err := a.Routes.Delete(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	if err := a.MCP.Delete(ctx, "search"); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "B to remove the route", func() bool { return !hasRoute() }, poll.Within(10*time.Second))
	poll.Eventually(t, "B to remove the MCP server", func() bool { return !hasServer() }, poll.Within(10*time.Second))
}

// A token revoked on replica A cuts the socket its holder opened on
// replica B at once (close 4401), not at B's next keepalive.
func TestReplicasCutRevokedAccess(t *testing.T) {
	t.Parallel()
	dsn, _ := pgSchema(t)
	a := replica(t, dsn, "replica-a", time.Minute)
	b := replica(t, dsn, "replica-b", time.Minute)
	ctx := t.Context()
	u := a.User(t, "alice", false)
	s, err := u.Client.CreateSession(ctx, client.NewSession{Title: "revoked elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := a.Auth.ListTokens(ctx, "alice")
	if err != nil || len(tokens) != 1 {
		t.Fatalf("tokens %+v, %v", tokens, err)
	}
	cn, err := client.New(b.URL, client.WithToken(u.Token)).Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cn.Close() })
	if _, err := cn.Subscribe(ctx, s.ID, -1); err != nil {
		t.Fatal(err)
	}
	if err := a.Auth.RevokeToken(ctx, "alice", tokens[0].ID); err != nil {
		t.Fatal(err)
	}
	// B's keepalive is 20 s away.
	poll.Eventually(t, "B to close the socket", func() bool {
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
