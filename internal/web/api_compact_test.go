package web_test

import (
	"context"
	"testing"

	"harness/client"
)

// POST /api/sessions/{id}/compact: 200 with the result for writers, 409
// busy while the agent works, 403 for viewers; the summary's meter drops.
func TestRESTCompact(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	ctx := t.Context()
	s, err := e.alice.CreateSession(ctx, client.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.alice.AddMember(ctx, s.ID, "bob", "viewer"); err != nil {
		t.Fatal(err)
	}

	// Nothing to compact yet.
	res, err := e.alice.Compact(ctx, s.ID)
	if err != nil || res.Compacted || res.Message != "No compactable history yet." {
		t.Fatalf("empty session: %+v, %v", res, err)
	}
	// The demo's summaries are about 550 tokens: the history must be larger.
	for _, p := range []string{"long: 400", "long: 300", "hello"} {
		if _, err := e.alice.SendMessage(ctx, s.ID, p, "followup"); err != nil {
			t.Fatal(err)
		}
		e.idle(t, s.ID)
	}
	before, err := e.alice.GetSession(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if before.Context.Window != 128_000 || before.Context.Tokens <= 0 || before.Context.Percent <= 0 {
		t.Fatalf("session meter %+v", before.Context)
	}

	_, err = e.bob.Compact(ctx, s.ID)
	wantErr(t, "viewer", err, 403, "forbidden")

	// Busy while another maintenance task holds the agent.
	ag, _ := e.app.Manager.Lookup(s.ID)
	started, release, held := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		held <- ag.RunMaintenance(context.Background(), func(context.Context) error {
			close(started)
			<-release
			return nil
		})
	}()
	<-started
	_, err = e.alice.Compact(ctx, s.ID)
	wantErr(t, "busy", err, 409, "busy")
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}

	res, err = e.alice.Compact(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Compacted || res.Replaced < 2 || res.TokensSaved <= 0 || res.CompactionID == "" {
		t.Fatalf("result %+v", res)
	}
	after, err := e.alice.GetSession(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Context.Tokens >= before.Context.Tokens || after.Context != res.Context {
		t.Errorf("meter %+v after (result says %+v), %+v before", after.Context, res.Context, before.Context)
	}
}
