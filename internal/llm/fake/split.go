package fake

import "unicode/utf8"

// split cuts s into n pieces of about equal rune count (n > 0), or into
// words with their leading space (n == 0).
func split(s string, n int) []string {
	if s == "" {
		return nil
	}
	if n > 0 {
		return splitN(s, n)
	}
	var out []string
	start := 0
	for i := 1; i < len(s); i++ {
		if s[i] == ' ' || s[i] == '\n' {
			if s[i-1] != ' ' && s[i-1] != '\n' {
				out = append(out, s[start:i])
				start = i
			}
		}
	}
	return append(out, s[start:])
}

// splitN cuts s into n pieces of about equal rune count; fewer when s has
// fewer runes. An empty s is one empty piece.
func splitN(s string, n int) []string {
	runes := utf8.RuneCountInString(s)
	if n > runes {
		n = max(1, runes)
	}
	out := make([]string, 0, n)
	start, seen, piece := 0, 0, 0
	take := runes / n
	if runes%n > 0 {
		take++
	}
	for i := range s {
		if seen == take && piece < n-1 {
			out = append(out, s[start:i])
			start, seen = i, 0
			piece++
			take = runes / n
			if piece < runes%n {
				take++
			}
		}
		seen++
	}
	return append(out, s[start:])
}
