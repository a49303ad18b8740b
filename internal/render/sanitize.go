package render

import (
	"regexp"

	"github.com/microcosm-cc/bluemonday"
)

// sanitizer is the last fence before HTML reaches a page: an allow-list of
// the elements markdown produces, chroma's classes, and links that open in
// a new tab without an opener or referrer. No style, no id, no event
// handler, no script, no form, no image.
type sanitizer struct {
	p *bluemonday.Policy
}

var (
	// chroma token classes ("k", "nx", "c1", "line", "cl", ...).
	chromaSpanClass = regexp.MustCompile(`^(line|cl|ln|lnt|hl|code-lang|[a-z]{1,3}[0-9]?)$`)
	preClass        = regexp.MustCompile(`^(chroma|plain)$`)
	divClass        = regexp.MustCompile(`^(code|code-head)$`)
	langAttr        = regexp.MustCompile(`^[a-z0-9+#._-]{1,32}$`)
	alignAttr       = regexp.MustCompile(`^(left|right|center)$`)
	checkboxType    = regexp.MustCompile(`^checkbox$`)
	olStart         = regexp.MustCompile(`^[0-9]{1,9}$`)
)

func newSanitizer() *sanitizer {
	p := bluemonday.NewPolicy()
	p.AllowElements("p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6",
		"blockquote", "ul", "li", "em", "strong", "del", "s", "code", "sup", "sub",
		"kbd", "table", "thead", "tbody", "tr", "details", "summary")
	p.AllowAttrs("start").Matching(olStart).OnElements("ol")
	p.AllowElements("ol")
	p.AllowAttrs("align").Matching(alignAttr).OnElements("th", "td")
	p.AllowElements("th", "td")
	p.AllowAttrs("class").Matching(chromaSpanClass).OnElements("span")
	p.AllowElements("span")
	p.AllowAttrs("class").Matching(preClass).OnElements("pre")
	p.AllowElements("pre")
	p.AllowAttrs("class").Matching(divClass).OnElements("div")
	p.AllowAttrs("data-lang").Matching(langAttr).OnElements("div")
	p.AllowElements("div")
	// GFM task lists: disabled checkboxes only.
	p.AllowAttrs("type").Matching(checkboxType).OnElements("input")
	p.AllowAttrs("checked", "disabled").OnElements("input")

	p.AllowAttrs("href").OnElements("a")
	p.AllowURLSchemes("http", "https", "mailto")
	p.AllowRelativeURLs(true)
	p.RequireParseableURLs(true)
	p.RequireNoFollowOnLinks(true)
	p.RequireNoReferrerOnLinks(true)
	// Adds target="_blank" and rel="noopener" to absolute links.
	p.AddTargetBlankToFullyQualifiedLinks(true)
	return &sanitizer{p: p}
}

func (s *sanitizer) sanitize(h string) string { return s.p.Sanitize(h) }
