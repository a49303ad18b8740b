package app_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"sync"
	"syscall"
	"testing"
	"time"

	"harness/client"
	"harness/internal/app"
	"harness/internal/driver"
	"harness/internal/driverstore"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/llm/openai"
	"harness/internal/models"
	"harness/internal/session"
	"harness/internal/testkit/apptest"
)

// fakeModelURL builds and starts cmd/fakellm once, in its own process, so
// that what a benchmark measures in this process is Harness's work only
// (the model server's decoding of every request is not counted).
var fakeModelURL = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "fakellm-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "fakellm")
	if out, err := exec.Command("go", "build", "-o", bin, "harness/cmd/fakellm").CombinedOutput(); err != nil {
		return "", fmt.Errorf("build fakellm: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-chunk-delay", "0", "-time-scale", "0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	re := regexp.MustCompile(`url=(http://\S+)`)
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			go func() {
				for sc.Scan() {
				}
			}()
			return m[1], nil
		}
	}
	return "", fmt.Errorf("fakellm did not say where it listens")
})

// seedTurns is a log of n finished turns as a real session makes them: a
// user message, a 16-chunk streamed reply and its assistant message.
func seedTurns(tb testing.TB, n int) []session.Event {
	tb.Helper()
	l := session.New(session.Header{ID: "seed"}, session.Options{})
	must := func(_ session.Event, err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	for t := 1; t <= n; t++ {
		must(l.Append(session.TypeTurnStart, session.TurnStart{Turn: t}))
		must(l.Append(session.TypeStepStart, session.StepBoundary{Turn: t, Step: 1}))
		must(l.AppendSurface(session.TypeUserMessage, llm.UserText(fmt.Sprintf("question %d: what does the function on line %d do?", t, t*7), llm.Source{Kind: llm.SourceUser, UserID: "u1", Name: "bench"}), session.Append(), nil))
		text := ""
		for c := range 16 {
			part := fmt.Sprintf("word%d-%d ", t, c)
			text += part
			must(l.Append(session.TypeAssistantChunk, session.AssistantChunk{Turn: t, Step: 1, Chunk: llm.Chunk{Type: llm.ChunkTextDelta, Index: 0, Text: part}}))
		}
		am := session.AssistantMessage{Turn: t, Step: 1, Message: llm.Message{ID: llm.NewID(), Role: llm.RoleAssistant, Content: []llm.ContentBlock{llm.Text(text)}, Source: llm.Source{Kind: llm.SourceModel, Provider: "bench", Model: "demo"}}}
		must(l.AppendSurface(session.TypeAssistantMessage, am, session.Append(), nil))
		must(l.Append(session.TypeStepEnd, session.StepBoundary{Turn: t, Step: 1}))
		must(l.Append(session.TypeTurnEnd, session.TurnEnd{Turn: t, Reason: session.TurnEndReason{Kind: session.ReasonCompleted}}))
	}
	return l.Events(0, l.Len())
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTurnCPU is the CPU a turn costs this process (driver, store,
// the real OpenAI adapter and HTTP client) with a history of 10 to 5,000
// turns, against the scripted model in another process over loopback.
// The target: at 1,000 and 5,000 turns, within 1.3 times the cost at
// 10.
func BenchmarkTurnCPU(b *testing.B) {
	url, err := fakeModelURL()
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{10, 100, 1000, 5000} {
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			p, err := openai.New(openai.Config{
				Name: "bench", Label: "bench", Kind: openai.KindDeepSeek, BaseURL: url,
				DefaultModel: "demo", Thinking: true, DefaultEffort: llm.EffortHigh,
				Models: []llm.ModelInfo{{ID: "demo", ContextWindow: 1 << 30, DefaultMaxTokens: 8192, Efforts: openai.DeepSeekEfforts(), DefaultEffort: llm.EffortHigh}},
			})
			if err != nil {
				b.Fatal(err)
			}
			a := apptest.StartApp(b, nil, app.Options{Providers: []llm.Provider{p}})
			ctx := context.Background()
			row := &models.Session{ID: "bench-" + fmt.Sprint(n), OwnerID: "u1", Provider: "bench", Model: "demo", Mode: "auto"}
			if row.Workspace, err = a.Workspaces.CreateFresh(row.ID); err != nil {
				b.Fatal(err)
			}
			if err := a.Store.CreateSession(ctx, row); err != nil {
				b.Fatal(err)
			}
			ag, err := a.Manager.CreateSeeded(ctx, driverstore.MetaOf(row), seedTurns(b, n))
			if err != nil {
				b.Fatal(err)
			}
			turn := func() {
				if err := ag.Followup(ctx, llm.UserText("hi", llm.Source{Kind: llm.SourceUser})); err != nil {
					b.Fatal(err)
				}
				if err := ag.Wait(ctx); err != nil {
					b.Fatal(err)
				}
			}
			// Warm: the first request logs a full header, and the second
			// turn's pre-step check folds the seeded history into the
			// context meter once (a loaded session pays that once; the
			// growth measurements build history turn by turn instead).
			turn()
			turn()
			if ag.Status() != driver.StatusIdle {
				b.Fatal("not idle")
			}
			// The seed's events are written by now, not during the turns
			// measured, and its garbage collected.
			if err := a.Store.W.Flush(ctx, row.ID); err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			if path := os.Getenv("HARNESS_BENCH_CPUPROFILE"); path != "" {
				// The turns only, not the seeding.
				f, err := os.Create(fmt.Sprintf("%s.%d", path, n))
				if err != nil {
					b.Fatal(err)
				}
				if err := pprof.StartCPUProfile(f); err != nil {
					b.Fatal(err)
				}
				defer func() { pprof.StopCPUProfile(); f.Close() }()
			}
			start := cpuTime()
			b.ResetTimer()
			for b.Loop() {
				turn()
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-start).Microseconds())/1000/float64(b.N), "cpu-ms/turn")
		})
	}
}

// runTurns sends n followups of text to a session as user userID and waits
// for each turn; it returns the session's agent.
func runTurns(b *testing.B, a *app.App, id, userID string, n int, text string) *driver.Agent {
	b.Helper()
	ctx := context.Background()
	ag, err := a.Manager.Get(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	for range n {
		if err := ag.Followup(ctx, llm.UserText(text, llm.Source{Kind: llm.SourceUser, UserID: userID, Name: "bench"})); err != nil {
			b.Fatal(err)
		}
		if err := ag.Wait(ctx); err != nil {
			b.Fatal(err)
		}
	}
	return ag
}

// BenchmarkStorageBytesPerEvent runs the storage workload of the
// side-by-side measurements (one session, 200 turns, replies of 16 text
// chunks from the demo model, unpaced) and reports the SQLite database's
// size after a WAL checkpoint per stored event, with and without the empty
// database's own size.
func BenchmarkStorageBytesPerEvent(b *testing.B) {
	for b.Loop() {
		a := apptest.StartApp(b, nil, app.Options{DemoOptions: []fake.Option{fake.WithChunkDelay(0)}})
		ctx := context.Background()
		size := func() int64 {
			if err := a.DB.W.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`).Error; err != nil {
				b.Fatal(err)
			}
			fi, err := os.Stat(a.Config.DBDSN)
			if err != nil {
				b.Fatal(err)
			}
			return fi.Size()
		}
		empty := size()
		u := a.User(b, "bench", false)
		s, err := u.Client.CreateSession(ctx, client.NewSession{Mode: "auto"})
		if err != nil {
			b.Fatal(err)
		}
		ag := runTurns(b, a.App, s.ID, u.ID, 200, "long: 16")
		if err := a.Store.W.Flush(ctx, s.ID); err != nil {
			b.Fatal(err)
		}
		events := float64(ag.Log().Len())
		total := size()
		if keep := os.Getenv("HARNESS_BENCH_KEEPDB"); keep != "" {
			// For looking at where the bytes go (sqlite3's dbstat).
			if err := a.DB.W.Exec(`VACUUM INTO ?`, keep).Error; err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(events, "events")
		b.ReportMetric(float64(total)/events, "bytes/event")
		b.ReportMetric(float64(total-empty)/events, "delta-bytes/event")
	}
}
