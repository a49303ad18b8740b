package render

import (
	"html"
	"strings"

	"github.com/yuin/goldmark/ast"
)

// escapeText escapes s for an HTML text node or attribute.
func escapeText(s string) string { return html.EscapeString(s) }

// plainText collects the literal text under an inline node.
func plainText(n ast.Node, source []byte) string {
	var sb strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch t := c.(type) {
		case *ast.Text:
			sb.Write(t.Segment.Value(source))
		case *ast.String:
			sb.Write(t.Value)
		}
		return ast.WalkContinue, nil
	})
	return sb.String()
}
