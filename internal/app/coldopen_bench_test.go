package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/pprof"
	"testing"
	"time"

	"harness/client"
	"harness/internal/app"
	"harness/internal/llm/fake"
	"harness/internal/testkit"
	"harness/internal/testkit/apptest"
)

// BenchmarkColdReopen is the side-by-side measurements' "cold reopen": a
// session of 200 turns of a 16-chunk reply (about 5,600 events) is built
// once; then each iteration starts a fresh server on that data directory
// and reads the session as a client would, over loopback HTTP:
//
//   - page-ms: the chat page (cookie login first, not timed);
//   - rest-ms: the whole history over REST, paged at the maximum 5,000
//     events (a second fresh server, so the page did not load anything);
//   - ws-ms: a WebSocket subscription from the start until replay/done (a
//     third; it loads the session).
//
// HARNESS_BENCH_CPUPROFILE names a CPU profile of the timed reads only.
func BenchmarkColdReopen(b *testing.B) {
	cfg := apptest.Config(b.TempDir())
	opts := apptest.Options(app.Options{DemoOptions: []fake.Option{fake.WithChunkDelay(0)}})
	start := func() (*app.App, *httptest.Server, func()) {
		a, err := app.New(context.Background(), testkit.Logger(), cfg, opts)
		if err != nil {
			b.Fatal(err)
		}
		hs := httptest.NewServer(a.Handler())
		// As the side-by-side script does, read once the server has
		// settled: the sandbox's start-up probe has run.
		_ = a.Sandbox.Status()
		return a, hs, func() {
			hs.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := a.Close(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}

	// Build the session once.
	a, hs, stop := start()
	ctx := context.Background()
	u, err := a.Auth.CreateUser(ctx, "bench", "bench-password", false)
	if err != nil {
		b.Fatal(err)
	}
	tok, err := a.Auth.CreateToken(ctx, "bench", "bench")
	if err != nil {
		b.Fatal(err)
	}
	s, err := client.New(hs.URL, client.WithToken(tok)).CreateSession(ctx, client.NewSession{Mode: "auto"})
	if err != nil {
		b.Fatal(err)
	}
	ag := runTurns(b, a, s.ID, u.ID, 200, "long: 16")
	events := ag.Log().Len()
	stop()

	get := func(c *http.Client, req *http.Request) []byte {
		res, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil || res.StatusCode != http.StatusOK {
			b.Fatalf("%s: %d %v\n%.300s", req.URL.Path, res.StatusCode, err, body)
		}
		return body
	}
	var pageTime, restTime, wsTime time.Duration
	for b.Loop() {
		// The chat page on a fresh server.
		a, hs, stop := start()
		cookie, _, err := a.Auth.Login(ctx, "bench", "bench-password", "127.0.0.1", "bench")
		if err != nil {
			b.Fatal(err)
		}
		c := hs.Client()
		get(c, mustRequest(b, hs.URL+"/api/providers", tok, "")) // warm the connection
		req := mustRequest(b, hs.URL+"/sessions/"+s.ID, "", cookie)
		stopProf := profile(b, "page")
		t0 := time.Now()
		get(c, req)
		pageTime += time.Since(t0)
		stopProf()
		stop()

		// The whole history over REST on another fresh server.
		_, hs, stop = start()
		c = hs.Client()
		get(c, mustRequest(b, hs.URL+"/api/providers", tok, ""))
		// Timed: each page's request and response, read whole; decoding
		// the page is the client's business and stays out (a browser's
		// JSON.parse is several times faster than encoding/json).
		stopProf = profile(b, "rest")
		n, since := 0, int64(-1)
		var rest time.Duration
		for {
			var page struct {
				Events []struct {
					Seq int64 `json:"seq"`
				} `json:"events"`
				Head int64 `json:"head"`
			}
			t0 := time.Now()
			body := get(c, mustRequest(b, fmt.Sprintf("%s/api/sessions/%s/events?since=%d&limit=5000", hs.URL, s.ID, since), tok, ""))
			rest += time.Since(t0)
			if err := json.Unmarshal(body, &page); err != nil {
				b.Fatal(err)
			}
			n += len(page.Events)
			if len(page.Events) == 0 || page.Events[len(page.Events)-1].Seq >= page.Head {
				break
			}
			since = page.Events[len(page.Events)-1].Seq
		}
		restTime += rest
		stopProf()
		stop()
		if int64(n) != events {
			b.Fatalf("REST read %d events, want %d", n, events)
		}

		// The WebSocket replay on a third fresh server: it loads the
		// session (the subscription follows the live agent).
		_, hs, stop = start()
		conn, err := client.New(hs.URL, client.WithToken(tok)).Dial(ctx)
		if err != nil {
			b.Fatal(err)
		}
		stopProf = profile(b, "ws")
		t0 = time.Now()
		sub, err := conn.Subscribe(ctx, s.ID, -1)
		if err != nil {
			b.Fatal(err)
		}
		replayed := 0
		for p := range sub.C {
			if p.Ch == client.ChReplayDone {
				break
			}
			if p.Ch == client.ChEvent {
				replayed++
			}
		}
		wsTime += time.Since(t0)
		stopProf()
		_ = conn.Close()
		stop()
		if int64(replayed) != events {
			b.Fatalf("the socket replayed %d events, want %d", replayed, events)
		}
	}
	b.ReportMetric(float64(pageTime.Microseconds())/1000/float64(b.N), "page-ms")
	b.ReportMetric(float64(restTime.Microseconds())/1000/float64(b.N), "rest-ms")
	b.ReportMetric(float64(wsTime.Microseconds())/1000/float64(b.N), "ws-ms")
	b.ReportMetric(float64(events), "events")
}

func mustRequest(b *testing.B, url, token, cookie string) *http.Request {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		b.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: "harness_session", Value: cookie})
	}
	return req
}

// profile starts a CPU profile of one timed read, to
// $HARNESS_BENCH_CPUPROFILE-name (the first iteration's only).
func profile(b *testing.B, name string) func() {
	base := os.Getenv("HARNESS_BENCH_CPUPROFILE")
	if base == "" {
		return func() {}
	}
	path := base + "-" + name
	if _, err := os.Stat(path); err == nil {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}
