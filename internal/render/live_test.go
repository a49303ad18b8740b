package render_test

import (
	"fmt"
	"strings"
	"testing"

	"harness/internal/auth"
	"harness/internal/render"
	"harness/internal/session"
	"harness/internal/ws"
)

var ada = &auth.Actor{UserID: "u-ada", Name: "ada", DisplayName: "Ada", Via: auth.ViaCookie}

// fixtureLog loads a fixture as the in-memory log the renderer reads.
func fixtureLog(t *testing.T, evs []session.Event) *session.Log {
	t.Helper()
	l, err := session.Load(session.Header{ID: "fixture"}, evs, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func newLiveRenderer(l *session.Log) *render.Renderer {
	return render.NewRenderer(render.NewMarkdown(), render.RendererOptions{
		Logs: func(id string) (*session.Log, bool) { return l, l != nil && id == "fixture" },
	})
}

func TestLiveGolden(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"demo-tools", "failures", "compaction"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			evs := loadFixture(t, name)
			r := newLiveRenderer(fixtureLog(t, evs))
			var sb strings.Builder
			for _, ev := range evs {
				h, err := r.Render(ev, ws.RenderContext{Session: "fixture", Role: auth.SessionRoleOwner, Actor: ada})
				if err != nil {
					t.Fatalf("seq %d %s: %v", ev.Seq, ev.Type, err)
				}
				if h != "" {
					fmt.Fprintf(&sb, "<!-- %d %s -->\n%s\n", ev.Seq, ev.Type, h)
				}
			}
			golden(t, "live-"+name+".html", sb.String())
		})
	}
}

// TestLiveConvergesWithFold: a page that received every event live shows
// the same transcript as a page rendered from the whole log, and as one
// rendered mid-way and then followed live (a reload mid-stream).
func TestLiveConvergesWithFold(t *testing.T) {
	t.Parallel()
	md := render.NewMarkdown()
	for _, name := range []string{"demo-tools", "failures", "compaction"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			evs := loadFixture(t, name)
			r := newLiveRenderer(fixtureLog(t, evs))
			want := normalize(t, renderItems(t, md.Fold(evs, render.FoldOptions{ViewerID: "u-ada"}).Items))
			for _, cut := range []int{0, len(evs) / 3, len(evs) / 2, len(evs) - 5} {
				p := newPage(t)
				head := md.Fold(evs[:cut], render.FoldOptions{ViewerID: "u-ada"})
				p.apply(t, `<template data-op="upsert">`+renderItems(t, head.Items)+`</template>`)
				for _, ev := range evs[cut:] {
					h, err := r.Render(ev, ws.RenderContext{Session: "fixture", Actor: ada, Role: auth.SessionRoleOwner})
					if err != nil {
						t.Fatal(err)
					}
					p.apply(t, h)
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
	r := newLiveRenderer(nil)
	n := 0
	for _, ev := range evs {
		if ev.Type != session.TypeAssistantChunk || !strings.Contains(string(ev.Data), "-delta") {
			continue
		}
		n++
		h, err := r.Render(ev, ws.RenderContext{Session: "fixture", Actor: ada})
		if err != nil || h != "" {
			t.Fatalf("seq %d: html %q, err %v", ev.Seq, h, err)
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
	r := newLiveRenderer(nil)
	viewer := &auth.Actor{Via: auth.ViaShare, ShareSessionID: "fixture"}
	for _, ev := range evs {
		if ev.Type != session.TypeUserMessage || !strings.Contains(string(ev.Data), `"kind":"user"`) {
			continue
		}
		mine, _ := r.Render(ev, ws.RenderContext{Session: "fixture", Actor: ada})
		theirs, _ := r.Render(ev, ws.RenderContext{Session: "fixture", Actor: viewer, Role: auth.SessionRoleViewer})
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
	r := newLiveRenderer(fixtureLog(t, evs))
	viewer := &auth.Actor{UserID: "u-vic", Name: "vic", Via: auth.ViaCookie}
	for _, ev := range evs {
		if ev.Type != session.TypeApprovalAsked && ev.Type != session.TypeQuestionAsked {
			continue
		}
		owner, _ := r.Render(ev, ws.RenderContext{Session: "fixture", Actor: ada, Role: auth.SessionRoleOwner})
		view, _ := r.Render(ev, ws.RenderContext{Session: "fixture", Actor: viewer, Role: auth.SessionRoleViewer})
		if !strings.Contains(owner, `data-parent="takeover"`) || !strings.Contains(owner, `class="tk-panel`) {
			t.Errorf("seq %d: the owner gets no panel: %s", ev.Seq, owner)
		}
		if strings.Contains(view, "tk-panel") {
			t.Errorf("seq %d: a viewer gets a panel", ev.Seq)
		}
		if ev.Type == session.TypeApprovalAsked && !strings.Contains(owner, `<pre class="tk-detail">`) {
			t.Errorf("seq %d: the approval does not show the call: %s", ev.Seq, owner)
		}
	}
}
