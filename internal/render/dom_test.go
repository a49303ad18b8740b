package render_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// page is a minimal model of the chat page's DOM on which live fragments
// are applied the way web/static/app.js applies them (docs/ui.md), so tests
// can check that a live page converges to what a reload renders.
type page struct {
	root       *html.Node // <body>
	transcript *html.Node
	dock       *html.Node
	takeover   *html.Node
	title      *html.Node
}

func newPage(t *testing.T) *page {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(`<!DOCTYPE html><html><body><header id="chat-head"><h1 id="session-title"></h1><span id="ctx-meter"></span></header><div id="transcript"></div><div id="dock"></div><div id="takeover"></div></body></html>`))
	if err != nil {
		t.Fatal(err)
	}
	p := &page{}
	p.root = find(doc, func(n *html.Node) bool { return n.DataAtom == atom.Body })
	p.transcript = p.byID("transcript")
	p.dock = p.byID("dock")
	p.title = p.byID("session-title")
	p.takeover = p.byID("takeover")
	return p
}

func find(n *html.Node, match func(*html.Node) bool) *html.Node {
	if match(n) {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := find(c, match); f != nil {
			return f
		}
	}
	return nil
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func setAttr(n *html.Node, key, val string) {
	for i, a := range n.Attr {
		if a.Key == key {
			n.Attr[i].Val = val
			return
		}
	}
	n.Attr = append(n.Attr, html.Attribute{Key: key, Val: val})
}

func (p *page) byID(id string) *html.Node {
	return find(p.root, func(n *html.Node) bool { return n.Type == html.ElementNode && attr(n, "id") == id })
}

// apply applies one fragment.
func (p *page) apply(t *testing.T, fragment string) {
	t.Helper()
	if fragment == "" {
		return
	}
	nodes, err := html.ParseFragment(strings.NewReader(fragment), &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body})
	if err != nil {
		t.Fatal(err)
	}
	for _, tpl := range nodes {
		if tpl.DataAtom != atom.Template {
			t.Fatalf("fragment has a top-level %s, want only <template>", tpl.Data)
		}
		content := children(tpl)
		for _, c := range content {
			tpl.RemoveChild(c)
		}
		switch op := attr(tpl, "data-op"); op {
		case "upsert":
			parent := p.transcript
			if id := attr(tpl, "data-parent"); id != "" {
				parent = p.byID(id)
			}
			for _, c := range content {
				if c.Type != html.ElementNode {
					continue
				}
				if old := p.byID(attr(c, "id")); old != nil {
					keepMinSeq(old, c)
					old.Parent.InsertBefore(c, old)
					old.Parent.RemoveChild(old)
					continue
				}
				parent.AppendChild(c)
			}
		case "replace-prefix":
			prefix := attr(tpl, "data-prefix")
			var found []*html.Node
			for c := p.transcript.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode && strings.HasPrefix(attr(c, "id"), prefix) {
					found = append(found, c)
				}
			}
			for _, c := range content {
				if c.Type != html.ElementNode {
					continue
				}
				if len(found) > 0 {
					p.transcript.InsertBefore(c, found[0])
				} else {
					p.transcript.AppendChild(c)
				}
			}
			for _, f := range found {
				p.transcript.RemoveChild(f)
			}
		case "fill":
			target := p.byID(attr(tpl, "data-target"))
			if target == nil {
				continue
			}
			for _, c := range children(target) {
				target.RemoveChild(c)
			}
			for _, c := range content {
				target.AppendChild(c)
			}
		case "remove":
			if target := p.byID(attr(tpl, "data-target")); target != nil {
				target.Parent.RemoveChild(target)
			}
		case "append-text", "preview":
			// Transient streaming state; the final upsert replaces it.
		default:
			t.Fatalf("unknown op %q", op)
		}
	}
}

// keepMinSeq keeps the element's first seq when a later event replaces it.
func keepMinSeq(old, repl *html.Node) {
	o, err1 := strconv.ParseInt(attr(old, "data-seq"), 10, 64)
	n, err2 := strconv.ParseInt(attr(repl, "data-seq"), 10, 64)
	if err1 == nil && err2 == nil && o < n {
		setAttr(repl, "data-seq", attr(old, "data-seq"))
	}
}

func children(n *html.Node) []*html.Node {
	var out []*html.Node
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		out = append(out, c)
	}
	// A parsed <template>'s children live in its content; x/net/html keeps
	// them as ordinary children.
	return out
}

// inner renders a node's children.
func inner(t *testing.T, n *html.Node) string {
	t.Helper()
	var buf bytes.Buffer
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if err := html.Render(&buf, c); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

// normalize parses and re-renders HTML so two renderings compare equal
// regardless of serialisation details.
func normalize(t *testing.T, s string) string {
	t.Helper()
	p := newPage(t)
	nodes, err := html.ParseFragment(strings.NewReader(s), &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		p.transcript.AppendChild(n)
	}
	return inner(t, p.transcript)
}
