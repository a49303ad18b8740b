package render_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/chroma/v2/styles"

	"harness/internal/render"
)

func TestMarkdown(t *testing.T) {
	t.Parallel()
	md := render.NewMarkdown()
	cases := []struct {
		name, src string
		want      []string
		not       []string
	}{
		{"empty", "  \n", nil, []string{"<p>"}},
		{"emphasis", "**b** _i_ ~~gone~~", []string{"<strong>b</strong>", "<em>i</em>", "<del>gone</del>"}, nil},
		{"go code highlighted", "```go\nfunc main() {}\n```", []string{`<div class="code" data-lang="go">`, `<span class="code-lang">go</span>`, `<pre class="chroma">`, `<span class="kd">func</span>`}, nil},
		{"unknown language is plain", "```nosuchlang\na < b\n```", []string{`data-lang="nosuchlang"`, "a &lt; b"}, []string{`<span class="line">`}},
		{"no language", "```\nx := 1\n```", []string{`<span class="code-lang">text</span>`, "x := 1"}, nil},
		{"indented code", "    indented\n", []string{`<pre class="chroma"><code>indented`}, nil},
		{"table", "| a | b |\n|:--|--:|\n| 1 | 2 |", []string{"<table>", `<th align="left">a</th>`, `<td align="right">2</td>`}, nil},
		{"task list", "- [x] done\n- [ ] todo", []string{`<input checked="" disabled="" type="checkbox"`, `<input disabled="" type="checkbox"`}, nil},
		{"autolink", "see https://example.com/x?y=1", []string{`<a href="https://example.com/x?y=1" rel="nofollow noreferrer noopener" target="_blank">`}, nil},
		{"relative link", "[home](/sessions)", []string{`<a href="/sessions" rel="nofollow noreferrer">home</a>`}, []string{"_blank"}},
		{"image becomes link", "![cat](https://example.com/cat.png)", []string{`>[image: cat]</a>`}, []string{"<img"}},
		{"raw html dropped", "a <b>bold</b> <span onclick=x>s</span>", []string{"bold"}, []string{"<b>", "<span onclick", "onclick"}},
		{"hard wraps", "line one\nline two", []string{"line one<br>"}, nil},
		{"heading without id", "# Title", []string{"<h1>Title</h1>"}, []string{"id="}},
		{"huge text stays plain", strings.Repeat("x", render.MaxMarkdownBytes+1), []string{`<pre class="plain">`}, nil},
		{"fence language cannot inject", "```go\"><script>\nx\n```", nil, []string{"<script", `data-lang="go"`}},
	}
	for _, c := range cases {
		got := md.Render(c.src)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", c.name, truncate(got), w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: %q contains %q", c.name, truncate(got), n)
			}
		}
	}
}

func truncate(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}

// TestChromaCSSUpToDate keeps web/static/chroma.css equal to ChromaCSS
// (-update rewrites it).
func TestChromaCSSUpToDate(t *testing.T) {
	t.Parallel()
	css, err := render.ChromaCSS(styles.Get(render.LightStyle), styles.Get(render.DarkStyle))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "web", "static", "chroma.css")
	if *update {
		if err := os.WriteFile(path, []byte(css), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != css {
		t.Error("web/static/chroma.css is stale: run go test ./internal/render -update")
	}
	for _, want := range []string{".chroma .kd {", "prefers-color-scheme: dark", ":root[data-theme=dark] .chroma .kd"} {
		if !strings.Contains(css, want) {
			t.Errorf("chroma css lacks %q", want)
		}
	}
}

func BenchmarkMarkdown(b *testing.B) {
	md := render.NewMarkdown()
	src := strings.Repeat("Some **text** with `code` and a [link](https://x.y).\n\n```go\nfunc f() int { return 1 }\n```\n\n", 20)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		md.Render(src)
	}
}
