package render

import "regexp"

// secretLike matches strings that look like credentials: provider keys,
// bearer tokens and long opaque tokens.
var secretLike = regexp.MustCompile(`(?i)(sk-[a-z0-9_-]{6,}|bearer\s+[a-z0-9._~+/=-]{8,}|api[_-]?key["':= ]+[a-z0-9._-]{8,}|[a-z0-9_-]{40,})`)

// safeMessage hides anything credential-like in a failure message before
// it is shown. Failures are built never to carry keys; this is the second
// fence (a provider may echo a key in an error body).
func safeMessage(s string) string {
	return truncateText(secretLike.ReplaceAllString(s, "[redacted]"), 2000)
}

// SafeMessage is safeMessage for other packages' pages (a provider's
// failure shown outside a transcript, e.g. a route's connection test).
func SafeMessage(s string) string { return safeMessage(s) }
