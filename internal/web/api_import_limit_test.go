package web_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"harness/client"
)

// At most two imports run at once: with two held open (their bodies not
// yet fully sent), a third is refused with 503 unavailable and
// Retry-After and stores nothing; the two then complete.
func TestImportConcurrencyLimit(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	ctx := t.Context()
	log := corpusBytes(t, "examples--acp-agent--parallel-tool-calls--session.jsonl")
	half := bytes.IndexByte(log, '\n') + 1

	type done struct {
		s   client.Session
		err error
	}
	results := make(chan done, 2)
	var bodies []*io.PipeWriter
	for range 2 {
		pr, pw := io.Pipe()
		bodies = append(bodies, pw)
		go func() {
			s, err := e.alice.Import(ctx, pr)
			results <- done{s, err}
		}()
		// The server reads the body only holding a slot; the gauge below
		// says when both hold one.
		if _, err := pw.Write(log[:half]); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); e.app.Service.ImportsRunning() != 2; {
		if time.Now().After(deadline) {
			t.Fatalf("%d imports running, want 2", e.app.Service.ImportsRunning())
		}
		time.Sleep(5 * time.Millisecond)
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.app.URL+"/api/sessions/import", bytes.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.aliceTok)
	req.Header.Set("Accept", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"unavailable"`) || res.Header.Get("Retry-After") != "5" {
		t.Fatalf("third import: %d Retry-After %q %s", res.StatusCode, res.Header.Get("Retry-After"), body)
	}
	if list, err := e.alice.ListSessions(ctx, client.ListOptions{}); err != nil || len(list.Sessions) != 0 {
		t.Fatalf("the refused import stored %+v %v", list, err)
	}

	for _, pw := range bodies {
		if _, err := pw.Write(log[half:]); err != nil {
			t.Fatal(err)
		}
		pw.Close()
	}
	for range 2 {
		if r := <-results; r.err != nil || r.s.Title != "Use the read tool twice" {
			t.Fatalf("held import: %+v %v", r.s, r.err)
		}
	}
	if list, err := e.alice.ListSessions(ctx, client.ListOptions{}); err != nil || len(list.Sessions) != 2 {
		t.Fatalf("after the two: %+v %v", list, err)
	}
	if n := e.app.Service.ImportsRunning(); n != 0 {
		t.Fatalf("%d import slots still held", n)
	}
}
