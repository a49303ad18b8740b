package render_test

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"harness/internal/llm"
	"harness/internal/render"
	"harness/internal/session"
)

// TestUserBubbleImages: a user message's images show in its bubble as
// links to the page's attachment route, each an <img> with its size and a
// text alternative; the live fragment and the fold agree, and a share-link
// page's fold links its own route. Names a person chose are escaped.
func TestUserBubbleImages(t *testing.T) {
	t.Parallel()
	r := &run{t: t}
	r.add(session.TypeUserMessage, llm.Message{ID: "m1", Role: llm.RoleUser, Source: llm.Source{Kind: llm.SourceUser, UserID: "u-ada", Name: "Ada"},
		Content: []llm.ContentBlock{llm.Text("look"),
			llm.Image("a-1", "image/png", 1234, 640, 480, `x"><script>alert(1)</script>.png`),
			llm.Image("a-2", "image/webp", 99, 75, 100, "")}})
	r.add(session.TypeUserMessage, llm.Message{ID: "m2", Role: llm.RoleUser, Source: llm.Source{Kind: llm.SourceUser, UserID: "u-ada", Name: "Ada"},
		Content: []llm.ContentBlock{llm.Image("a-3", "image/gif", 10, 5, 7, "only.gif")}})

	p := newLive(nil, 0, render.ProjectionOptions{})
	page := newPage(t)
	for _, ev := range r.evs {
		page.apply(t, live(t, p, ev, owner))
	}
	var folded bytes.Buffer
	tr := render.NewMarkdown().Fold(r.evs, render.FoldOptions{ViewerID: "u-ada", AttachmentBase: "/sessions/fixture"})
	if err := render.Items(tr.Items).Render(t.Context(), &folded); err != nil {
		t.Fatal(err)
	}
	var liveHTML strings.Builder
	for _, c := range children(page.transcript) {
		if err := html.Render(&liveHTML, c); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := normalize(t, liveHTML.String()), normalize(t, folded.String()); got != want {
		t.Fatalf("live and fold differ:\nlive %s\nfold %s", got, want)
	}

	imgs := findAll(page.transcript, atom.Img)
	if len(imgs) != 3 {
		t.Fatalf("%d images, want 3", len(imgs))
	}
	want := []struct{ src, alt, w, h string }{
		{"/sessions/fixture/attachments/a-1", `x"><script>alert(1)</script>.png, PNG image, 640 × 480`, "640", "480"},
		{"/sessions/fixture/attachments/a-2", "WEBP image, 75 × 100", "75", "100"},
		{"/sessions/fixture/attachments/a-3", "only.gif, GIF image, 5 × 7", "5", "7"},
	}
	for i, w := range want {
		im := imgs[i]
		if attr(im, "src") != w.src || attr(im, "alt") != w.alt || attr(im, "width") != w.w || attr(im, "height") != w.h {
			t.Errorf("image %d: src %q alt %q %sx%s", i, attr(im, "src"), attr(im, "alt"), attr(im, "width"), attr(im, "height"))
		}
		if a := im.Parent; a.DataAtom != atom.A || attr(a, "href") != w.src || !strings.HasPrefix(attr(a, "aria-label"), "Open the image full size") {
			t.Errorf("image %d is not in a labelled link to itself", i)
		}
	}
	if strings.Contains(folded.String(), "<script>") {
		t.Error("a file name reached the page unescaped")
	}
	// The image-only bubble has no empty text nor a copy button.
	if u := page.byID("u-m2"); len(findAll(u, atom.Button)) != 0 || strings.Contains(render1(t, u), "user-text") {
		t.Errorf("an image-only bubble: %s", render1(t, u))
	}

	shared := render.NewMarkdown().Fold(r.evs, render.FoldOptions{AttachmentBase: "/s/tok"})
	folded.Reset()
	if err := render.Items(shared.Items).Render(t.Context(), &folded); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(folded.String(), `src="/s/tok/attachments/a-1"`) || strings.Contains(folded.String(), "/sessions/") {
		t.Errorf("a share page's images: %s", folded.String())
	}
}

func findAll(n *html.Node, a atom.Atom) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.DataAtom == a {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func render1(t *testing.T, n *html.Node) string {
	t.Helper()
	var sb strings.Builder
	if err := html.Render(&sb, n); err != nil {
		t.Fatal(err)
	}
	return sb.String()
}
