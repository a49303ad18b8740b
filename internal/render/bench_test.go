package render_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"harness/internal/importer"
	"harness/internal/render"
	"harness/internal/session"
)

// corpusDir holds recorded DeepSeek Harness sessions (real pacing, real
// reasoning and tool-call deltas).
const corpusDir = "/work/shared/corpus/dsh-sessions"

func readCorpus(b *testing.B, name string) []session.Event {
	b.Helper()
	f, err := os.Open(filepath.Join(corpusDir, name))
	if err != nil {
		b.Skipf("corpus not available: %v", err)
	}
	defer f.Close()
	res, err := importer.Read(f, importer.Options{})
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return res.Events
}

// BenchmarkProjectionApply is what a session topic does per event: apply
// it, then render the fragment for two viewer classes (the owner and a
// reader), over whole recorded sessions. ns/event is the figure.
func BenchmarkProjectionApply(b *testing.B) {
	for _, c := range []struct {
		name string
		evs  func(*testing.B) []session.Event
	}{
		{"corpus-advanced-toolchain", func(b *testing.B) []session.Event {
			return readCorpus(b, "examples--headless-agent--advanced-toolchain--session.jsonl")
		}},
		{"corpus-approval-composer", func(b *testing.B) []session.Event {
			return readCorpus(b, "apps--web--approval-composer--session.jsonl")
		}},
		{"fixture-demo-tools", func(b *testing.B) []session.Event { return loadFixture(b, "demo-tools") }},
	} {
		b.Run(c.name, func(b *testing.B) {
			evs := c.evs(b)
			md := render.NewMarkdown()
			opts := render.ProjectionOptions{Meter: true}
			start := time.Now()
			for b.Loop() {
				p := render.NewProjection(md, "bench", nil, 0, opts)
				for _, ev := range evs {
					if err := p.Apply(ev); err != nil {
						b.Fatal(err)
					}
					if _, err := p.Fragment(true, "u-ada"); err != nil {
						b.Fatal(err)
					}
					if _, err := p.Fragment(false, ""); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*len(evs)), "ns/event")
			b.ReportMetric(float64(len(evs)), "events/op")
		})
	}
}

// BenchmarkProjectionDelta is the hot path: a text delta (no preview due)
// applied and asked for by two viewer classes.
func BenchmarkProjectionDelta(b *testing.B) {
	deltas := make([]string, 4096)
	for i := range deltas {
		deltas[i] = "word "
	}
	l, evs := streamLog(b, deltas)
	md := render.NewMarkdown()
	first := 3 // turn/start, step/start, block-start
	p := render.NewProjection(md, "fixture", l, int64(first), render.ProjectionOptions{PreviewInterval: time.Hour})
	i := first
	for b.Loop() {
		if i == len(evs) {
			p, i = render.NewProjection(md, "fixture", l, int64(first), render.ProjectionOptions{PreviewInterval: time.Hour}), first
		}
		if err := p.Apply(evs[i]); err != nil {
			b.Fatal(err)
		}
		if _, err := p.Fragment(true, "u-ada"); err != nil {
			b.Fatal(err)
		}
		if _, err := p.Fragment(false, ""); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkNewProjection primes a projection in the middle of a long
// streaming block (a topic opened, or a page reloaded, mid-turn).
func BenchmarkNewProjection(b *testing.B) {
	deltas := make([]string, 4000)
	for i := range deltas {
		deltas[i] = "word "
	}
	l, _ := streamLog(b, deltas)
	md := render.NewMarkdown()
	for b.Loop() {
		render.NewProjection(md, "fixture", l, l.Len(), render.ProjectionOptions{})
	}
}

// BenchmarkFoldPage folds and renders a whole fixture log, as a history
// page does.
func BenchmarkFoldPage(b *testing.B) {
	evs := loadFixture(b, "demo-tools")
	md := render.NewMarkdown()
	b.ReportMetric(float64(len(evs)), "events/op")
	for b.Loop() {
		tr := md.Fold(evs, render.FoldOptions{ViewerID: "u-ada"})
		if len(tr.Items) == 0 {
			b.Fatal("no items")
		}
	}
}
