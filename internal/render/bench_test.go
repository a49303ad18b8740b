package render_test

import (
	"testing"

	"harness/internal/render"
	"harness/internal/session"
	"harness/internal/ws"
)

// BenchmarkRenderDelta is the hot path: a text delta for an HTML
// subscriber (no preview due).
func BenchmarkRenderDelta(b *testing.B) {
	var deltas []string
	for range 200 {
		deltas = append(deltas, "word ")
	}
	l, evs := streamLog(&testing.T{}, deltas)
	r := render.NewRenderer(render.NewMarkdown(), render.RendererOptions{Logs: func(string) (*session.Log, bool) { return l, true }})
	ev := evs[len(evs)-1]
	rc := ws.RenderContext{Session: "fixture", Actor: ada}
	for b.Loop() {
		if _, err := r.Render(ev, rc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderToolResult renders a tool card live (call looked up in
// the log).
func BenchmarkRenderToolResult(b *testing.B) {
	evs := loadFixture(b, "demo-tools")
	l, err := session.Load(session.Header{ID: "fixture"}, evs, session.Options{})
	if err != nil {
		b.Fatal(err)
	}
	r := render.NewRenderer(render.NewMarkdown(), render.RendererOptions{Logs: func(string) (*session.Log, bool) { return l, true }})
	var ev session.Event
	for _, e := range evs {
		if e.Type == session.TypeToolResult {
			ev = e
			break
		}
	}
	rc := ws.RenderContext{Session: "fixture", Actor: ada}
	for b.Loop() {
		if _, err := r.Render(ev, rc); err != nil {
			b.Fatal(err)
		}
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
