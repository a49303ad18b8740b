package render_test

import (
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"harness/internal/compact"
	"harness/internal/render"
	"harness/internal/session"
)

// TestCompactionMarkers: each compaction shows one collapsed marker with
// its trigger and figures, where its summary was logged; checkpoints show
// nothing else.
func TestCompactionMarkers(t *testing.T) {
	t.Parallel()
	evs := loadFixture(t, "compaction")
	tr := render.NewMarkdown().Fold(evs, render.FoldOptions{ViewerID: "u-ada"})
	var summaries []session.Event
	for _, ev := range evs {
		if ev.Type == session.TypeCompactionSum {
			summaries = append(summaries, ev)
		}
	}
	var markers []*render.CompactionItem
	for _, it := range tr.Items {
		switch v := it.(type) {
		case *render.CompactionItem:
			markers = append(markers, v)
		case *render.NoticeItem:
			t.Errorf("notice %q: a checkpoint or a compaction shows a notice", v.Text)
		}
	}
	if len(markers) != 2 || len(summaries) != 2 {
		t.Fatalf("%d markers for %d summaries, want 2 of each", len(markers), len(summaries))
	}
	for i, want := range []render.CompactionTrigger{render.CompactionAutomatic, render.CompactionManual} {
		m := markers[i]
		cs, err := session.Decode[session.CompactionSummary](summaries[i])
		if err != nil {
			t.Fatal(err)
		}
		if m.Trigger != want || m.Seq != summaries[i].Seq || m.ID != "c-"+strconv.FormatInt(summaries[i].Seq, 10) ||
			m.Replaced != len(cs.ShadowedSeqs) || m.Tokens != cs.ShadowedTokenCount {
			t.Errorf("marker %d = %+v, want %s at seq %d with %d items, %d tokens", i, m.Base, want, summaries[i].Seq, len(cs.ShadowedSeqs), cs.ShadowedTokenCount)
		}
		got := renderItems(t, []render.Item{m})
		for _, frag := range []string{
			`<details class="item compaction" id="` + m.ID + `"`,
			"Conversation compacted</span>",
			"— " + strconv.Itoa(m.Replaced) + " items, ~",
			`<span class="pill compaction-` + string(want) + `">` + string(want) + `</span>`,
			"<h2>Primary Request and Intent</h2>", "<code>calc.go</code>",
		} {
			if !strings.Contains(got, frag) {
				t.Errorf("marker %d lacks %q:\n%s", i, frag, got)
			}
		}
		if strings.Contains(got, "<details class=\"item compaction\" id=\""+m.ID+"\" data-seq=\""+m.SeqAttr()+"\" open") {
			t.Errorf("marker %d is expanded by default", i)
		}
	}
	// Checkpoints (plugin messages) are not user bubbles.
	for _, it := range tr.Items {
		if u, ok := it.(*render.UserItem); ok && strings.Contains(u.Text, compact.SummaryOpenTag) {
			t.Errorf("checkpoint shown as a bubble: %.80q", u.Text)
		}
	}
}

// TestLiveCompactionMarker: the live marker names its trigger when the
// projection saw the compaction start, and is the same element the fold
// renders.
func TestLiveCompactionMarker(t *testing.T) {
	t.Parallel()
	evs := loadFixture(t, "compaction")
	md := render.NewMarkdown()
	l := fixtureLog(t, evs)
	n := 0
	for i, ev := range evs {
		if ev.Type != session.TypeCompactionSum {
			continue
		}
		n++
		// Primed from the log up to the summary: the start is in reach.
		got := live(t, newLive(l, ev.Seq, render.ProjectionOptions{}), ev, owner)
		var folded *render.CompactionItem
		for _, it := range md.Fold(evs[:i+1], render.FoldOptions{}).Items {
			if c, ok := it.(*render.CompactionItem); ok {
				folded = c
			}
		}
		if want := `<template data-op="upsert">` + renderItems(t, []render.Item{folded}) + `</template>`; got != want {
			t.Errorf("seq %d: live marker differs from the fold:\n%s", ev.Seq, firstDiffText(want, got))
		}
		bare := live(t, newLive(nil, 0, render.ProjectionOptions{}), ev, owner)
		if !strings.Contains(bare, "Conversation compacted") || strings.Contains(bare, "compaction-manual") || strings.Contains(bare, "compaction-automatic") {
			t.Errorf("seq %d: without the compaction start the marker should have no trigger: %s", ev.Seq, bare)
		}
	}
	if n != 2 {
		t.Fatalf("%d summaries in the fixture, want 2", n)
	}
}

// TestContextMeterGolden renders the header meter for the states it has.
func TestContextMeterGolden(t *testing.T) {
	t.Parallel()
	var sb strings.Builder
	for _, c := range []struct {
		name string
		c    render.ContextFigures
	}{
		{"empty", render.ContextFigures{Window: 128_000}},
		{"some", render.ContextFigures{Tokens: 12_345, Window: 100_000}},
		{"at the threshold", render.ContextFigures{Tokens: 2_400, Window: 3_000}},
		{"beyond the window", render.ContextFigures{Tokens: 3_300, Window: 3_000}},
		{"window unknown", render.ContextFigures{Tokens: 950}},
		{"large", render.ContextFigures{Tokens: 1_234_567, Window: 2_000_000}},
	} {
		sb.WriteString("<!-- " + c.name + " -->\n")
		if err := render.ContextMeter(c.c).Render(t.Context(), &sb); err != nil {
			t.Fatal(err)
		}
		sb.WriteString("\n")
	}
	got := sb.String()
	golden(t, "meter.html", got)
	for _, want := range []string{
		`data-used="12345" data-window="100000" data-percent="12.3" data-level="ok"`,
		`<span class="ctx-tokens">12.3k</span> <span class="ctx-window">/ 100k</span>`,
		`<span class="pct">12%</span>`,
		`data-level="high"`, `<span class="pct">80%</span>`,
		`data-level="over"`, `<span class="pct">110%</span>`,
		`<span class="ctx-window">tokens</span>`, "context window unknown",
		`title="Context: 12,345 of 100,000 tokens (12.3%)`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("meter markup lacks %q", want)
		}
	}
}

// TestLiveMeterFollowsTheContext: with the meter on, the events that
// change the context carry the meter (upserted into the header), others
// do not, and every class gets the same one; its figures are compact's
// measurement of the log up to the event (the window from the latest
// request/context); over the fixture it rises turn by turn, drops at each
// compaction's checkpoint, and the transcript is unaffected.
func TestLiveMeterFollowsTheContext(t *testing.T) {
	t.Parallel()
	evs := loadFixture(t, "compaction")
	meter := compact.NewMeter()
	r := newLive(fixtureLog(t, evs), 0, render.ProjectionOptions{Meter: true})
	window := "0"
	p := newPage(t)
	type reading struct {
		ev   session.Event
		used int64
	}
	var readings []reading
	for i, ev := range evs {
		h := live(t, r, ev, owner)
		for _, c := range []class{reader, shareLink, owner} {
			if again, err := r.Fragment(c.canAnswer, c.viewerID); err != nil || strings.Contains(again, `data-parent="chat-head"`) != strings.Contains(h, `data-parent="chat-head"`) {
				t.Fatalf("seq %d: class %+v: meter differs (%v)", ev.Seq, c, err)
			}
		}
		if ev.Type == session.TypeRequestContext {
			window = "6000"
		}
		p.apply(t, h)
		has := strings.Contains(h, `data-parent="chat-head"`)
		switch ev.Type {
		case session.TypeUserMessage, session.TypeAssistantMessage, session.TypeToolResult, session.TypeCompactionEnd,
			session.TypeModelSelected, session.TypeRequestContext:
			if !has {
				t.Fatalf("seq %d %s: no meter", ev.Seq, ev.Type)
			}
			m := p.byID("ctx-meter")
			used, err := strconv.ParseInt(attr(m, "data-used"), 10, 64)
			if err != nil || attr(m, "data-window") != window {
				t.Fatalf("seq %d: meter %s, want window %s", ev.Seq, renderNode(t, m), window)
			}
			if want := meter.Measure(fixtureLog(t, evs[:i+1]), 0).TotalTokens; used != want {
				t.Fatalf("seq %d: meter %d tokens, compact measures %d", ev.Seq, used, want)
			}
			readings = append(readings, reading{ev, used})
		default:
			if has {
				t.Errorf("seq %d %s carries a meter", ev.Seq, ev.Type)
			}
		}
	}
	// Before the first compaction every answer raises the meter; each
	// checkpoint lowers it.
	var lastAnswer int64
	compacted, drops := false, 0
	for i, rd := range readings {
		if rd.ev.Type == session.TypeAssistantMessage && !compacted {
			if rd.used <= lastAnswer {
				t.Errorf("seq %d: meter %d after an answer, not above %d", rd.ev.Seq, rd.used, lastAnswer)
			}
			lastAnswer = rd.used
		}
		if rd.ev.Type == session.TypeUserMessage && rd.ev.SurfaceOp != nil && rd.ev.SurfaceOp.Op == session.OpReplace {
			compacted = true
			if i == 0 || rd.used >= readings[i-1].used {
				t.Errorf("seq %d: the checkpoint did not lower the meter (%d)", rd.ev.Seq, rd.used)
			} else {
				drops++
			}
		}
	}
	if drops != 2 {
		t.Errorf("%d drops at checkpoints, want 2", drops)
	}
	want := normalize(t, renderItems(t, render.NewMarkdown().Fold(evs, render.FoldOptions{ViewerID: "u-ada"}).Items))
	if got := inner(t, p.transcript); got != want {
		t.Errorf("meter updates changed the transcript:\n%s", firstDiffText(want, got))
	}
	if n := strings.Count(renderNode(t, p.root), `id="ctx-meter"`); n != 1 {
		t.Errorf("%d meters on the page, want 1", n)
	}
}

func renderNode(t *testing.T, n *html.Node) string {
	t.Helper()
	var sb strings.Builder
	if err := html.Render(&sb, n); err != nil {
		t.Fatal(err)
	}
	return sb.String()
}
