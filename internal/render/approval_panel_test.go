package render_test

import (
	"strings"
	"testing"

	"harness/internal/render"
	"harness/internal/session"
)

// approvalEvents logs a turn with two approvals: a write with a diff
// preview (allowed for the session) and a bash call with its command.
func approvalEvents(t *testing.T) (*session.Log, []session.Event) {
	t.Helper()
	l := session.New(session.Header{ID: "fixture"}, session.Options{})
	add := func(typ session.Type, data any) {
		if _, err := l.Append(typ, data); err != nil {
			t.Fatal(err)
		}
	}
	add(session.TypeTurnStart, session.TurnStart{Turn: 1})
	add(session.TypeApprovalAsked, session.ApprovalAsked{ID: "a1", ToolName: "write", CallID: "c1", Reason: `"write" needs approval (write access)`,
		Preview: &session.ApprovalPreview{Kind: session.PreviewDiff, Path: "notes.txt", Created: true, Added: 2,
			Diff: "--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1,2 @@\n+hello <b>world</b>\n+second\n"}})
	add(session.TypeApprovalDecided, session.ApprovalDecided{ID: "a1", Outcome: session.ApprovalAllowedSession, Tool: "write", By: &session.Actor{UserID: "u-ada", Name: "Ada"}})
	add(session.TypeApprovalAsked, session.ApprovalAsked{ID: "a2", ToolName: "bash", CallID: "c2",
		Preview: &session.ApprovalPreview{Kind: session.PreviewCommand, Command: "rm -rf build && make", Description: "rebuild"}})
	return l, l.Events(0, l.Len())
}

func TestApprovalPanelShowsPreview(t *testing.T) {
	t.Parallel()
	_, evs := approvalEvents(t)
	r := newLive(nil, 0, render.ProjectionOptions{})
	p := newPage(t)
	for _, ev := range evs[:2] {
		p.apply(t, live(t, r, ev, owner))
	}
	panel := inner(t, p.takeover)
	for _, want := range []string{
		`data-tool="write"`,
		`<code class="path">notes.txt</code>`,
		`<span class="add">+2</span> <span class="del">-0</span>`,
		`<span class="pill">new file</span>`,
		`<pre class="diff tk-diff"`,
		`<span class="dl-file">+++ b/notes.txt`,
		`<span class="dl-add">+hello &lt;b&gt;world&lt;/b&gt;`,
		`<span class="dl-add">+second`,
		`data-decision="deny">Deny</button>`,
		`data-decision="allow-session"`, `>Allow write for this session</button>`,
		`data-decision="allow" data-focus="">Allow once</button>`,
	} {
		if !strings.Contains(panel, want) {
			t.Errorf("the panel lacks %q:\n%s", want, panel)
		}
	}
	if strings.Contains(panel, "<b>world") {
		t.Error("diff text reached the page as markup")
	}

	// Decided for the session: the panel goes, the row says so.
	p.apply(t, live(t, r, evs[2], owner))
	if got := inner(t, p.takeover); got != "" {
		t.Errorf("the panel stayed: %s", got)
	}
	if row := inner(t, p.byID("a-a1-state")); !strings.Contains(row, "allowed for this session by Ada") {
		t.Errorf("approval row state %q", row)
	}

	// A command preview shows the command and its description.
	p.apply(t, live(t, r, evs[3], owner))
	panel = inner(t, p.takeover)
	if !strings.Contains(panel, `<pre class="tk-detail">rm -rf build &amp;&amp; make</pre>`) || !strings.Contains(panel, `<div class="tk-desc muted">rebuild</div>`) ||
		!strings.Contains(panel, ">Allow bash for this session</button>") {
		t.Errorf("command panel:\n%s", panel)
	}
}
