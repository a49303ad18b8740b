package render_test

import (
	"strings"
	"testing"

	"golang.org/x/net/html"

	"harness/internal/llm"
	"harness/internal/render"
	"harness/internal/session"
)

// TestHeaderFollowsModeAndModel: a permission/mode event upserts the
// header's mode badge and a model/selected event its model label (named by
// ProjectionOptions.ModelLabel), for every viewer class, in place of the
// page's; without a label source the model change shows only its notice.
func TestHeaderFollowsModeAndModel(t *testing.T) {
	t.Parallel()
	r := &run{t: t}
	r.add(session.TypePermissionMode, session.PermissionModeSet{Mode: session.ModeAuto})
	r.add(session.TypeModelSelected, session.ModelSelected{Provider: "scripted", Model: "m-2"})
	r.add(session.TypePermissionMode, session.PermissionModeSet{Mode: session.ModeReadOnly})
	r.add(session.TypeModelSelected, session.ModelSelected{Provider: "demo", Model: "demo"})
	labels := func(provider, model string) (string, bool) {
		if provider == "demo" {
			return "Offline demo model", true
		}
		return "Scripted · " + model, false
	}

	for _, c := range []class{owner, reader, shareLink} {
		p := newLive(nil, 0, render.ProjectionOptions{ModelLabel: labels})
		page := newPage(t)
		// The page as the server rendered it: ask, the first model.
		page.apply(t, `<template data-op="upsert" data-parent="chat-head"><span id="mode-badge">Ask</span><span id="model-label">Scripted · m-1</span></template>`)
		wantMode := []string{"Auto", "Auto", "Read-only", "Read-only"}
		wantModel := []string{"Scripted · m-1", "Scripted · m-2", "Scripted · m-2", "Offline demo model"}
		for i, ev := range r.evs {
			h := live(t, p, ev, c)
			page.apply(t, h)
			mode, model := page.byID("mode-badge"), page.byID("model-label")
			if got := inner(t, mode); got != wantMode[i] {
				t.Errorf("%+v seq %d: mode badge %q, want %q", c, ev.Seq, got, wantMode[i])
			}
			if got := inner(t, model); got != wantModel[i] {
				t.Errorf("%+v seq %d: model label %q, want %q", c, ev.Seq, got, wantModel[i])
			}
			if mode.Parent != page.byID("chat-head") || model.Parent != page.byID("chat-head") {
				t.Errorf("%+v seq %d: the badges left the header", c, ev.Seq)
			}
		}
		if got := attr(page.byID("mode-badge"), "data-mode"); got != "read-only" {
			t.Errorf("mode badge data-mode %q", got)
		}
		if cls := attr(page.byID("model-label"), "class"); !strings.Contains(cls, "demo") {
			t.Errorf("the demo model's label is not marked: class %q", cls)
		}
		if n := len(children(page.byID("chat-head"))); n != 4 { // title, meter, mode, model
			t.Errorf("the header has %d children, want 4 (a badge was appended twice?)", n)
		}
	}

	// No label source: the notice row only.
	p := newLive(nil, 0, render.ProjectionOptions{})
	if h := live(t, p, r.evs[1], owner); strings.Contains(h, "model-label") || !strings.Contains(h, "Model: scripted / m-2") {
		t.Errorf("model/selected without a label source: %s", h)
	}
}

// TestErrorRowOffersRetry: a turn that failed shows its error row with a
// Retry button naming the turn (the page shows it only to writers).
func TestErrorRowOffersRetry(t *testing.T) {
	t.Parallel()
	r := &run{t: t}
	r.add(session.TypeTurnStart, session.TurnStart{Turn: 3})
	r.add(session.TypeTurnEnd, session.TurnEnd{Turn: 3, Reason: session.TurnEndReason{
		Kind: session.ReasonError, Error: &llm.Failure{Code: llm.CodeAuth, Status: 401, Message: "bad key"},
	}})
	r.add(session.TypeTurnStart, session.TurnStart{Turn: 4})
	r.add(session.TypeTurnEnd, session.TurnEnd{Turn: 4, Reason: session.TurnEndReason{Kind: session.ReasonCompleted}})
	page := newPage(t)
	p := newLive(nil, 0, render.ProjectionOptions{})
	for _, ev := range r.evs {
		page.apply(t, live(t, p, ev, shareLink))
	}
	btn := find(page.root, func(n *html.Node) bool { return attr(n, "data-action") == "retry-turn" })
	if btn == nil || attr(btn, "data-turn") != "3" || btn.Parent != page.byID("e-1") {
		t.Fatalf("no Retry button for turn 3 in its error row:\n%s", inner(t, page.transcript))
	}
	n := 0
	find(page.root, func(x *html.Node) bool {
		if attr(x, "data-action") == "retry-turn" {
			n++
		}
		return false
	})
	if n != 1 {
		t.Errorf("%d Retry buttons, want 1 (only the failed turn)", n)
	}
	fold := render.NewMarkdown().Fold(r.evs, render.FoldOptions{})
	if e, ok := fold.Items[0].(*render.ErrorItem); !ok || e.Turn != 3 {
		t.Errorf("fold: %#v, want the error row of turn 3", fold.Items)
	}
}
