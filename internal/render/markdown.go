package render

import (
	"bytes"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
)

// MaxMarkdownBytes bounds the text rendered as markdown; longer text is
// shown as plain preformatted text (still escaped), so one huge reply
// cannot stall the server.
const MaxMarkdownBytes = 512 << 10

// Markdown renders model text to sanitised HTML. It is safe for concurrent
// use.
type Markdown struct {
	md     goldmark.Markdown
	policy *sanitizer
}

// NewMarkdown builds the converter: GFM, chroma code blocks, no raw HTML,
// images as links, then the sanitiser.
func NewMarkdown() *Markdown {
	md := goldmark.New(
		goldmark.WithExtensions(
			extension.Strikethrough,
			extension.Linkify,
			extension.TaskList,
			extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)),
		),
		goldmark.WithRendererOptions(
			// Raw HTML in the source is omitted (goldmark's default); the
			// sanitiser below is the second fence.
			html.WithHardWraps(),
			renderer.WithNodeRenderers(
				util.Prioritized(newCodeBlockRenderer(), 100),
				util.Prioritized(imageAsLink{}, 100),
			),
		),
	)
	return &Markdown{md: md, policy: newSanitizer()}
}

// Render converts src to safe HTML. It never fails: text that cannot be
// converted is shown escaped.
func (m *Markdown) Render(src string) string {
	if strings.TrimSpace(src) == "" {
		return ""
	}
	if len(src) > MaxMarkdownBytes {
		return "<pre class=\"plain\">" + escapeText(src) + "</pre>"
	}
	var buf bytes.Buffer
	buf.Grow(len(src) * 2)
	if err := m.md.Convert([]byte(src), &buf); err != nil {
		return "<pre class=\"plain\">" + escapeText(src) + "</pre>"
	}
	return m.policy.sanitize(buf.String())
}

// imageAsLink renders ![alt](url) as a link: remote images would leak the
// reader's address to whoever the model names, and the page's CSP blocks
// them anyway.
type imageAsLink struct{}

func (imageAsLink) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindImage, func(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		n := node.(*ast.Image)
		dest := util.URLEscape(n.Destination, true)
		alt := plainText(n, source)
		if alt == "" {
			alt = "image"
		}
		if html.IsDangerousURL(dest) {
			_, _ = w.WriteString(escapeText("[" + alt + "]"))
			return ast.WalkSkipChildren, nil
		}
		_, _ = w.WriteString(`<a href="`)
		_, _ = w.Write(util.EscapeHTML(dest))
		_, _ = w.WriteString(`">`)
		_, _ = w.WriteString(escapeText("[image: " + alt + "]"))
		_, _ = w.WriteString(`</a>`)
		return ast.WalkSkipChildren, nil
	})
}
