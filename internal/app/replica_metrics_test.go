package app_test

import (
	"io"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"harness/internal/app"
	"harness/internal/models"
	"harness/internal/testkit/apptest"
	"harness/internal/testkit/poll"
)

// scrape is a's /metrics exposition.
func scrape(t *testing.T, a *apptest.App) string {
	t.Helper()
	rec := httptest.NewRecorder()
	a.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

// metricOf is the value of one series (name with its labels, as exposed)
// in a's /metrics; -1 when absent.
func metricOf(t *testing.T, a *apptest.App, series string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(scrape(t, a))
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("%s: %v", series, err)
	}
	return v
}

// A single SQLite server has no replicas: none of their series.
func TestSingleServerHasNoReplicaSeries(t *testing.T) {
	t.Parallel()
	a := apptest.StartApp(t, nil, app.Options{})
	text := scrape(t, a)
	if !strings.Contains(text, "harness_sessions_live") {
		t.Fatalf("no exposition to check:\n%s", text)
	}
	for _, name := range []string{"harness_leases_held", "harness_lease_", "harness_takeover", "harness_forwards_total",
		"harness_fencing_refusals_total", "harness_listener_", "harness_mirror_lag_seconds"} {
		if strings.Contains(text, name) {
			t.Errorf("a single server exposes %s", name)
		}
	}
}

// The replica's notification listener is up; when PostgreSQL drops its
// connection it reconnects, and the reconnection is counted.
func TestReplicaListenerReconnectCounted(t *testing.T) {
	t.Parallel()
	dsn, db := pgSchema(t)
	a := replica(t, dsn, "replica-a", time.Minute)
	poll.Eventually(t, "the listener to connect", func() bool {
		return metricOf(t, a, "harness_listener_up") == 1
	}, poll.Within(10*time.Second))
	if v := metricOf(t, a, "harness_listener_reconnects_total"); v != 0 {
		t.Fatalf("reconnects before any drop: %v", v)
	}
	// The listener's connection is the one whose last statement LISTENed
	// on this schema's channels.
	schema := dsn[strings.LastIndex(dsn, "search_path=")+len("search_path="):]
	var killed int
	err := db.QueryRowContext(t.Context(), `
		SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query LIKE 'LISTEN %' AND query LIKE '%' || $1 || '%'`, schema).Scan(&killed)
	if err != nil {
		t.Fatal(err)
	}
	if killed != 1 {
		t.Fatalf("terminated %d listener connections, want 1", killed)
	}
	poll.Eventually(t, "the listener to reconnect", func() bool {
		return metricOf(t, a, "harness_listener_reconnects_total") == 1 && metricOf(t, a, "harness_listener_up") == 1
	}, poll.Within(10*time.Second))
}

// Leases are counted as held while their agents live, released by an
// unload as unload and by the shutdown as shutdown.
func TestReplicaLeaseCounts(t *testing.T) {
	t.Parallel()
	dsn, _ := pgSchema(t)
	a := replica(t, dsn, "replica-a", time.Minute)
	ctx := t.Context()
	var ids []string
	for range 2 {
		row := models.Session{OwnerID: "u"}
		if err := a.Store.CreateSession(ctx, &row); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Manager.Get(ctx, row.ID); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, row.ID)
	}
	if v := metricOf(t, a, "harness_leases_held"); v != 2 {
		t.Fatalf("leases held = %v, want 2", v)
	}
	if v := metricOf(t, a, `harness_lease_acquisitions_total{reason="open"}`); v != 2 {
		t.Fatalf("open acquisitions = %v, want 2", v)
	}
	if err := a.Manager.Remove(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if v := metricOf(t, a, `harness_lease_releases_total{reason="unload"}`); v != 1 {
		t.Fatalf("unload releases = %v, want 1", v)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if v := metricOf(t, a, `harness_lease_releases_total{reason="shutdown"}`); v != 1 {
		t.Fatalf("shutdown releases = %v, want 1", v)
	}
	if v := metricOf(t, a, "harness_leases_held"); v != 0 {
		t.Fatalf("leases held after the shutdown = %v, want 0", v)
	}
}
