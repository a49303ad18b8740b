package render

import (
	"bytes"
	"html"
	"strings"

	"github.com/alecthomas/chroma/v2"
	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
	lexers "harness/third_party/chromalexers"
)

// maxHighlightBytes bounds the code highlighted by chroma; larger blocks
// are shown plain.
const maxHighlightBytes = 128 << 10

// codeBlockRenderer renders fenced and indented code blocks as
//
//	<div class="code" data-lang="go"><div class="code-head"><span class="code-lang">go</span></div>
//	<pre class="chroma"><code>…highlighted spans…</code></pre></div>
//
// with chroma's CSS classes (the colours live in chroma.css, light and
// dark). The client adds the copy button.
type codeBlockRenderer struct {
	formatter *chromahtml.Formatter
	style     *chroma.Style
}

// Chroma styles of the light and dark themes.
const (
	LightStyle = "github"
	DarkStyle  = "github-dark"
)

// classesOnly is the style handed to the formatter. With classes and no
// surrounding <pre>, what the formatter writes does not depend on the
// style (chroma.css holds the colours), so an empty one does: the styles
// package would parse every style chroma has at start.
var classesOnly = chroma.MustNewStyle(LightStyle, chroma.StyleEntries{})

func newCodeBlockRenderer() *codeBlockRenderer {
	return &codeBlockRenderer{
		formatter: chromahtml.New(chromahtml.WithClasses(true), chromahtml.PreventSurroundingPre(true), chromahtml.TabWidth(4)),
		style:     classesOnly,
	}
}

func (r *codeBlockRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindFencedCodeBlock, r.render)
	reg.Register(ast.KindCodeBlock, r.render)
}

func (r *codeBlockRenderer) render(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	var lang string
	if fc, ok := node.(*ast.FencedCodeBlock); ok {
		if l := fc.Language(source); l != nil {
			lang = string(l)
		}
	}
	var code bytes.Buffer
	lines := node.Lines()
	for i := range lines.Len() {
		seg := lines.At(i)
		code.Write(seg.Value(source))
	}
	lang = cleanLang(lang)
	_, _ = w.WriteString(`<div class="code"`)
	if lang != "" {
		_, _ = w.WriteString(` data-lang="` + html.EscapeString(lang) + `"`)
	}
	_, _ = w.WriteString(`><div class="code-head"><span class="code-lang">`)
	if lang == "" {
		_, _ = w.WriteString("text")
	} else {
		_, _ = w.WriteString(html.EscapeString(lang))
	}
	_, _ = w.WriteString(`</span></div><pre class="chroma"><code>`)
	_, _ = w.WriteString(r.highlight(lang, code.String()))
	_, _ = w.WriteString("</code></pre></div>\n")
	return ast.WalkSkipChildren, nil
}

// highlight returns the code as chroma spans, or escaped plain text for an
// unknown language, a huge block or a lexer failure.
func (r *codeBlockRenderer) highlight(lang, code string) string {
	if lang == "" || len(code) > maxHighlightBytes {
		return html.EscapeString(code)
	}
	lexer := lexers.Get(lang)
	if lexer == nil {
		return html.EscapeString(code)
	}
	it, err := chroma.Coalesce(lexer).Tokenise(nil, code)
	if err != nil {
		return html.EscapeString(code)
	}
	var out bytes.Buffer
	if err := r.formatter.Format(&out, r.style, it); err != nil {
		return html.EscapeString(code)
	}
	return out.String()
}

// cleanLang keeps a fence's first word when it looks like a language name.
func cleanLang(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), " ")
	s = strings.ToLower(s)
	if len(s) > 32 {
		return ""
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '_' || c == '#' || c == '.') {
			return ""
		}
	}
	return s
}
