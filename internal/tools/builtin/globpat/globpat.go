// Package globpat matches slash-separated paths against doublestar globs:
// `**` as a whole segment matches any number of segments (including none),
// `*`, `?` and `[...]` match within one segment (path.Match syntax), and
// `{a,b}` lists alternatives (nesting allowed).
package globpat

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// maxAlternatives bounds brace expansion so a hostile pattern cannot explode.
const maxAlternatives = 1024

// ErrBadPattern is wrapped by every syntax error.
var ErrBadPattern = errors.New("bad glob pattern")

// Pattern is a compiled glob.
type Pattern struct {
	source string
	alts   [][]string // each alternative split into segments
}

// Compile parses pattern. Leading "./" and repeated slashes are ignored.
func Compile(pattern string) (*Pattern, error) {
	if pattern == "" {
		return nil, fmt.Errorf("%w: empty pattern", ErrBadPattern)
	}
	expanded, err := expandBraces(pattern)
	if err != nil {
		return nil, err
	}
	p := &Pattern{source: pattern}
	for _, alt := range expanded {
		segs := splitSegments(alt)
		for _, s := range segs {
			if s == "**" {
				continue
			}
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("%w: %q: %v", ErrBadPattern, pattern, err)
			}
		}
		p.alts = append(p.alts, segs)
	}
	return p, nil
}

// String returns the source pattern.
func (p *Pattern) String() string { return p.source }

// HasSlash reports whether the pattern names directories (contains a
// separator); patterns without one are usually matched against base names.
func (p *Pattern) HasSlash() bool { return strings.Contains(p.source, "/") }

// Match reports whether the slash-separated path name matches.
func (p *Pattern) Match(name string) bool {
	segs := splitSegments(name)
	for _, alt := range p.alts {
		if matchSegments(alt, segs) {
			return true
		}
	}
	return false
}

func splitSegments(s string) []string {
	s = strings.TrimPrefix(s, "./")
	parts := strings.Split(s, "/")
	out := parts[:0]
	for _, p := range parts {
		if p != "" && p != "." {
			out = append(out, p)
		}
	}
	return out
}

// matchSegments is a DP over (pattern segment, path segment): m[j] says
// whether pat[:i] matches segs[:j].
func matchSegments(pat, segs []string) bool {
	m := make([]bool, len(segs)+1)
	m[0] = true
	for _, ps := range pat {
		next := make([]bool, len(segs)+1)
		if ps == "**" {
			// ** matches zero or more segments: carry any earlier match forward.
			seen := false
			for j := 0; j <= len(segs); j++ {
				seen = seen || m[j]
				next[j] = seen
			}
		} else {
			for j := 1; j <= len(segs); j++ {
				if m[j-1] {
					ok, _ := path.Match(ps, segs[j-1])
					next[j] = ok
				}
			}
		}
		m = next
	}
	return m[len(segs)]
}

// expandBraces expands {a,b} alternatives (nested, escapable with \).
func expandBraces(p string) ([]string, error) {
	open := -1
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			if depth == 0 {
				return nil, fmt.Errorf("%w: %q: unmatched }", ErrBadPattern, p)
			}
			depth--
			if depth == 0 {
				return expandGroup(p, open, i)
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("%w: %q: unmatched {", ErrBadPattern, p)
	}
	return []string{p}, nil
}

func expandGroup(p string, open, close int) ([]string, error) {
	prefix, body, suffix := p[:open], p[open+1:close], p[close+1:]
	var opts []string
	depth, last := 0, 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				opts = append(opts, body[last:i])
				last = i + 1
			}
		}
	}
	opts = append(opts, body[last:])
	var out []string
	for _, o := range opts {
		sub, err := expandBraces(prefix + o + suffix)
		if err != nil {
			return nil, err
		}
		out = append(out, sub...)
		if len(out) > maxAlternatives {
			return nil, fmt.Errorf("%w: %q: more than %d alternatives", ErrBadPattern, p, maxAlternatives)
		}
	}
	return out, nil
}
