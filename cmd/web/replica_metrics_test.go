package main

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"harness/client"
	"harness/internal/testkit/poll"
)

const metricsToken = "scrape-token-for-the-replica-tests"

// scrapeRemote reads /metrics as a remote Prometheus does: with the
// metrics token, through a proxy (not a direct loopback client, which
// needs no token).
func scrapeRemote(t *testing.T, p *serverProc, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	res, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// metric is the value of one series (name with its labels, as exposed) in
// p's /metrics; -1 when absent.
func metric(t *testing.T, p *serverProc, series string) float64 {
	t.Helper()
	status, text := scrapeRemote(t, p, metricsToken)
	if status != http.StatusOK {
		t.Fatalf("scrape with the metrics token: status %d\n%s", status, text)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("%s: %v", series, err)
	}
	return v
}

// Two replicas scraped as a remote Prometheus would. A session lives on
// A: A holds one lease; B follows the session (a mirror) and forwards a
// REST command to A. A is SIGKILLed: B takes the session over once the
// lease lapsed, and counts and times the takeover.
func TestReplicaMetrics(t *testing.T) {
	t.Parallel()
	ttl := 2 * time.Second
	procs, tok := replicaProcs(t, 2, ttl, "HARNESS_METRICS_TOKEN="+metricsToken)
	a, b := procs[0], procs[1]
	ctx := t.Context()

	if status, _ := scrapeRemote(t, a, metricsToken+"-wrong"); status != http.StatusUnauthorized {
		t.Fatalf("a wrong metrics token: status %d, want 401", status)
	}
	for _, p := range procs {
		// The listener connects after the replica starts serving.
		poll.Eventually(t, "the listener to connect", func() bool {
			return metric(t, p, "harness_listener_up") == 1
		}, poll.Within(10*time.Second))
		if v := metric(t, p, "harness_leases_held"); v != 0 {
			t.Fatalf("harness_leases_held = %v before any session, want 0", v)
		}
	}

	ca := client.New(a.URL, client.WithToken(tok))
	cb := client.New(b.URL, client.WithToken(tok))
	s, err := ca.CreateSession(ctx, client.NewSession{Title: "metrics", Mode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	wb := watch(t, "B", b.URL, tok, s.ID, -1) // B mirrors A's session
	if _, err := cb.SendMessage(ctx, s.ID, "forwarded by B", "followup"); err != nil {
		t.Fatalf("message to the non-owner: %v", err)
	}
	poll.Eventually(t, "the forwarded turn to reach B's mirror", func() bool {
		return wb.count("turn/end") >= 1
	}, poll.Within(30*time.Second))

	if v := metric(t, a, "harness_leases_held"); v != 1 {
		t.Fatalf("owner: harness_leases_held = %v, want 1", v)
	}
	if v := metric(t, a, `harness_lease_acquisitions_total{reason="open"}`); v != 1 {
		t.Fatalf("owner: open acquisitions = %v, want 1", v)
	}
	if v := metric(t, b, "harness_leases_held"); v != 0 {
		t.Fatalf("non-owner: harness_leases_held = %v, want 0", v)
	}
	if v := metric(t, b, `harness_forwards_total{kind="command",outcome="ok"}`); v != 1 {
		t.Fatalf("non-owner: forwarded commands = %v, want 1", v)
	}
	if v := metric(t, a, `harness_forwards_total{kind="command",outcome="ok"}`); v != 0 {
		t.Fatalf("owner: forwarded commands = %v, want 0 (it ran the command)", v)
	}
	if v := metric(t, b, "harness_mirror_lag_seconds_count"); v < 1 {
		t.Fatalf("non-owner: mirror lag observations = %v, want some", v)
	}

	a.kill()
	poll.Eventually(t, "B to take the session over", func() bool {
		return metric(t, b, "harness_takeovers_total") == 1
	}, poll.Within(30*time.Second))
	if v := metric(t, b, "harness_takeover_seconds_count"); v != 1 {
		t.Fatalf("takeover durations recorded: %v, want 1", v)
	}
	if v := metric(t, b, `harness_lease_acquisitions_total{reason="takeover"}`); v != 1 {
		t.Fatalf("takeover acquisitions = %v, want 1", v)
	}
	if v := metric(t, b, "harness_leases_held"); v != 1 {
		t.Fatalf("new owner: harness_leases_held = %v, want 1", v)
	}
	t.Logf("takeover: %.3fs from the lease's expiry to B holding it (lease TTL %v)",
		metric(t, b, "harness_takeover_seconds_sum"), ttl)
}
