package render_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"harness/internal/render"
	"harness/internal/session"
)

func TestFoldGolden(t *testing.T) {
	t.Parallel()
	md := render.NewMarkdown()
	for _, name := range []string{"demo-tools", "failures", "compaction", "subagent", "subagent-child"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tr := md.Fold(loadFixture(t, name), render.FoldOptions{ViewerID: "u-ada"})
			var sb strings.Builder
			sb.WriteString(renderItems(t, tr.Items))
			var dock strings.Builder
			if err := render.TodoDock(tr.Todos).Render(t.Context(), &dock); err != nil {
				t.Fatal(err)
			}
			sb.WriteString("\n<!-- dock -->\n" + dock.String() + "\n")
			golden(t, "fold-"+name+".html", sb.String())
		})
	}
}

// TestFoldItems checks what the fold shows of each kind of event.
func TestFoldItems(t *testing.T) {
	t.Parallel()
	md := render.NewMarkdown()
	tools := md.Fold(loadFixture(t, "demo-tools"), render.FoldOptions{ViewerID: "u-ada"})
	fails := md.Fold(loadFixture(t, "failures"), render.FoldOptions{ViewerID: "u-ada"})
	html := renderItems(t, tools.Items)
	failHTML := renderItems(t, fails.Items)

	count := func(items []render.Item, match func(render.Item) bool) int {
		n := 0
		for _, it := range items {
			if match(it) {
				n++
			}
		}
		return n
	}
	cases := []struct {
		name string
		got  int
		want int
	}{
		{"user bubbles (runtime context hidden)", count(tools.Items, func(it render.Item) bool { _, ok := it.(*render.UserItem); return ok }), 7},
		{"tool cards", count(tools.Items, func(it render.Item) bool { _, ok := it.(*render.ToolItem); return ok }), 6},
		{"approvals", count(tools.Items, func(it render.Item) bool { _, ok := it.(*render.ApprovalItem); return ok }), 3},
		{"questions", count(tools.Items, func(it render.Item) bool { _, ok := it.(*render.QuestionItem); return ok }), 1},
		{"error rows", count(fails.Items, func(it render.Item) bool { _, ok := it.(*render.ErrorItem); return ok }), 1},
		{"retry rows", count(fails.Items, func(it render.Item) bool { _, ok := it.(*render.RetryItem); return ok }), 1},
		{"streaming leftovers", count(append(tools.Items, fails.Items...), func(it render.Item) bool {
			switch v := it.(type) {
			case *render.TextItem:
				return v.Streaming
			case *render.ReasoningItem:
				return v.Streaming
			case *render.ToolCallDraftItem:
				return true
			}
			return false
		}), 0},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, c.got, c.want)
		}
	}

	contains := []struct{ html, want string }{
		{html, `<code class="cmd">echo hi; echo oops &gt;&amp;2; exit 3</code>`},
		{html, `exit 3</span>`},
		{html, `class="dl-add">+line one`},
		{html, `<span class="pill st-ok">allowed by Bob</span>`},
		{html, `answered: yes by Bob`},
		{html, `<div class="author">Bob</div>`},
		{html, `todo-pending`},
		{failHTML, `<code class="code">AUTH</code>`},
		{failHTML, `HTTP 401`},
		{failHTML, `Stopped by the user.`},
		{failHTML, `Stopped — the partial answer above was kept.`},
		{failHTML, `output token limit`},
		{failHTML, `<span class="nx">fmt</span>`},
		{failHTML, `retried (attempt 1)`},
	}
	for _, c := range contains {
		if !strings.Contains(c.html, c.want) {
			t.Errorf("rendered transcript lacks %q", c.want)
		}
	}
	if strings.Contains(html, `<div class="author">Ada</div>`) {
		t.Error("the viewer's own bubbles show an author")
	}
	if strings.Contains(html, "Current runtime context") {
		t.Error("runtime context snapshots are shown")
	}
	if len(tools.Todos) != 3 {
		t.Errorf("todos = %v, want 3", tools.Todos)
	}
	if tools.Usage == nil || fails.ContextWindow != 100_000 {
		t.Errorf("meter inputs: usage %v, window %d", tools.Usage, fails.ContextWindow)
	}
}

// TestFoldIDsUnique: every item id is unique and safe to put in a selector.
func TestFoldIDsUnique(t *testing.T) {
	t.Parallel()
	md := render.NewMarkdown()
	safe := regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	for _, name := range []string{"demo-tools", "failures", "compaction", "subagent", "subagent-child"} {
		seen := map[string]bool{}
		for _, it := range md.Fold(loadFixture(t, name), render.FoldOptions{}).Items {
			id := it.ItemID()
			if seen[id] || !safe.MatchString(id) {
				t.Errorf("%s: bad or duplicate id %q", name, id)
			}
			seen[id] = true
		}
	}
}

// TestFoldPages: folding a log page by page shows the same items as
// folding it whole (history pages are cut on message boundaries).
func TestFoldPages(t *testing.T) {
	t.Parallel()
	md := render.NewMarkdown()
	for _, name := range []string{"demo-tools", "compaction"} {
		evs := loadFixture(t, name)
		whole := md.Fold(evs, render.FoldOptions{ViewerID: "u-ada"})
		// Cut before every turn/start, as a page boundary at a user message
		// would.
		var pages [][]session.Event
		start := 0
		for i, ev := range evs {
			if ev.Type == session.TypeTurnStart && i > start {
				pages = append(pages, evs[start:i])
				start = i
			}
		}
		pages = append(pages, evs[start:])
		var items []render.Item
		for _, p := range pages {
			items = append(items, md.Fold(p, render.FoldOptions{ViewerID: "u-ada"}).Items...)
		}
		if a, b := renderItems(t, whole.Items), renderItems(t, items); a != b {
			t.Errorf("%s: paged fold differs from the whole fold:\n%s", name, firstDiffText(a, b))
		}
	}
}

// TestFoldMidStream: a page cut in the middle of a stream shows the
// partial blocks as streaming, the text rendered as markdown so far.
func TestFoldMidStream(t *testing.T) {
	t.Parallel()
	md := render.NewMarkdown()
	evs := loadFixture(t, "failures")
	cut := -1
	deltas := 0
	for i, ev := range evs {
		if ev.Type == session.TypeAssistantChunk && strings.Contains(string(ev.Data), `"text-delta"`) && strings.Contains(string(ev.Data), `"turn":1`) {
			deltas++
			if deltas == 6 {
				cut = i
				break
			}
		}
	}
	if cut < 0 {
		t.Fatal("fixture has no text stream")
	}
	tr := md.Fold(evs[:cut+1], render.FoldOptions{})
	var text *render.TextItem
	for _, it := range tr.Items {
		if v, ok := it.(*render.TextItem); ok {
			text = v
		}
	}
	if text == nil || !text.Streaming || text.Raw == "" || text.HTML == "" {
		t.Fatalf("streaming text item = %+v", text)
	}
	if got := renderItems(t, []render.Item{text}); !strings.Contains(got, `class="item assistant streaming"`) || !strings.Contains(got, `data-stream`) {
		t.Errorf("streaming block markup: %s", got)
	}
}

func firstDiffText(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return fmt.Sprintf("at byte %d:\n a: %.200s\n b: %.200s", i, a[i:], b[i:])
}
