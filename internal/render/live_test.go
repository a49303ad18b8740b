package render_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"harness/internal/render"
	"harness/internal/session"
)

// fixtureLog loads a fixture as the in-memory log a projection primes from.
func fixtureLog(t *testing.T, evs []session.Event) *session.Log {
	t.Helper()
	l, err := session.Load(session.Header{ID: "fixture"}, evs, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// newLive is a live projection of the fixture session primed from l with
// the events before upto (l nil: nothing primed).
func newLive(l *session.Log, upto int64, opts render.ProjectionOptions) *render.Projection {
	return render.NewProjection(render.NewMarkdown(), "fixture", l, upto, opts)
}

// viewer classes: the owner Ada (may answer prompts), another signed-in
// reader, a share-link viewer.
type class struct {
	canAnswer bool
	viewerID  string
}

var (
	owner     = class{true, "u-ada"}
	adaReader = class{false, "u-ada"}
	reader    = class{false, "u-vic"}
	shareLink = class{false, ""}
)

// live applies ev and returns its fragment for c.
func live(t testing.TB, p *render.Projection, ev session.Event, c class) string {
	t.Helper()
	if err := p.Apply(ev); err != nil {
		t.Fatalf("seq %d %s: %v", ev.Seq, ev.Type, err)
	}
	h, err := p.Fragment(c.canAnswer, c.viewerID)
	if err != nil {
		t.Fatalf("seq %d %s: fragment: %v", ev.Seq, ev.Type, err)
	}
	return h
}

func TestLiveGolden(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"demo-tools", "failures", "compaction", "subagent", "subagent-child"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			evs := loadFixture(t, name)
			p := newLive(nil, 0, render.ProjectionOptions{})
			var sb strings.Builder
			for _, ev := range evs {
				if h := live(t, p, ev, owner); h != "" {
					fmt.Fprintf(&sb, "<!-- %d %s -->\n%s\n", ev.Seq, ev.Type, h)
				}
			}
			golden(t, "live-"+name+".html", sb.String())
		})
	}
}

// TestLiveConvergesWithFold: a page that received every event live shows
// the same transcript as a page rendered from the whole log, and as one
// rendered mid-way and then followed live by a projection primed from the
// log at that point (a reload, or a topic opened, mid-stream).
func TestLiveConvergesWithFold(t *testing.T) {
	t.Parallel()
	md := render.NewMarkdown()
	for _, name := range []string{"demo-tools", "failures", "compaction", "subagent", "subagent-child"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			evs := loadFixture(t, name)
			l := fixtureLog(t, evs)
			want := normalize(t, renderItems(t, md.Fold(evs, render.FoldOptions{ViewerID: "u-ada"}).Items))
			for _, cut := range []int{0, len(evs) / 3, len(evs) / 2, len(evs) - 5} {
				p := newPage(t)
				head := md.Fold(evs[:cut], render.FoldOptions{ViewerID: "u-ada"})
				p.apply(t, `<template data-op="upsert">`+renderItems(t, head.Items)+`</template>`)
				pr := newLive(l, int64(cut), render.ProjectionOptions{})
				for _, ev := range evs[cut:] {
					p.apply(t, live(t, pr, ev, owner))
				}
				if got := inner(t, p.transcript); got != want {
					t.Errorf("cut at %d: live page differs from the reloaded page:\n%s", cut, firstDiffText(want, got))
				}
				if got := inner(t, p.takeover); got != "" {
					t.Errorf("cut at %d: answered prompts still take over the composer: %s", cut, got)
				}
			}
		})
	}
}

// TestLiveDeltasCarryNoHTML: the hot path (text and reasoning deltas) is
// applied by the browser from the event itself.
func TestLiveDeltasCarryNoHTML(t *testing.T) {
	t.Parallel()
	evs := loadFixture(t, "demo-tools")
	p := newLive(nil, 0, render.ProjectionOptions{PreviewInterval: time.Hour})
	n := 0
	for _, ev := range evs {
		h := live(t, p, ev, owner)
		if ev.Type != session.TypeAssistantChunk || !strings.Contains(string(ev.Data), "-delta") {
			continue
		}
		n++
		if h != "" {
			t.Fatalf("seq %d: html %q", ev.Seq, h)
		}
	}
	if n == 0 {
		t.Fatal("no deltas in the fixture")
	}
}

// TestLiveViewerSeesAuthors: a share-link viewer (no user) sees every
// author; the author of a bubble does not see their own name.
func TestLiveViewerSeesAuthors(t *testing.T) {
	t.Parallel()
	evs := loadFixture(t, "demo-tools")
	p := newLive(nil, 0, render.ProjectionOptions{})
	for _, ev := range evs {
		mine := live(t, p, ev, adaReader)
		theirs, err := p.Fragment(shareLink.canAnswer, shareLink.viewerID)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type != session.TypeUserMessage || !strings.Contains(string(ev.Data), `"kind":"user"`) {
			continue
		}
		fromAda := strings.Contains(string(ev.Data), `"userId":"u-ada"`)
		if fromAda == strings.Contains(mine, `class="author"`) {
			t.Errorf("seq %d: author shown to its writer = %v", ev.Seq, !fromAda)
		}
		if !strings.Contains(theirs, `class="author"`) {
			t.Errorf("seq %d: share viewer sees no author", ev.Seq)
		}
	}
}

// TestLivePromptsTakeOver: a pending approval or question shows a panel to
// those who may answer, never to viewers, and goes when answered.
func TestLivePromptsTakeOver(t *testing.T) {
	t.Parallel()
	evs := loadFixture(t, "demo-tools")
	p := newLive(nil, 0, render.ProjectionOptions{})
	for _, ev := range evs {
		mine := live(t, p, ev, owner)
		view, err := p.Fragment(reader.canAnswer, reader.viewerID)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type != session.TypeApprovalAsked && ev.Type != session.TypeQuestionAsked {
			continue
		}
		if !strings.Contains(mine, `data-parent="takeover"`) || !strings.Contains(mine, `class="tk-panel`) {
			t.Errorf("seq %d: the owner gets no panel: %s", ev.Seq, mine)
		}
		if strings.Contains(view, "tk-panel") {
			t.Errorf("seq %d: a viewer gets a panel", ev.Seq)
		}
		if ev.Type == session.TypeApprovalAsked && !strings.Contains(mine, `<pre class="tk-detail">`) {
			t.Errorf("seq %d: the approval does not show the call: %s", ev.Seq, mine)
		}
	}
}
