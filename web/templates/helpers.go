package templates

import (
	"net/url"
	"strconv"
	"strings"
	"time"
)

// titleOr names untitled sessions.
func titleOr(t string) string {
	if strings.TrimSpace(t) == "" {
		return "Untitled session"
	}
	return t
}

// ago formats a time relative to now, for lists.
func ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + " min ago"
	case d < 24*time.Hour:
		return strconv.Itoa(int(d.Hours())) + " h ago"
	case d < 7*24*time.Hour:
		return strconv.Itoa(int(d.Hours()/24)) + " days ago"
	}
	return t.Format("2 Jan 2006")
}

func i64(n int64) string { return strconv.FormatInt(n, 10) }

func boolAttr(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// nextURL is the session list's next page.
func nextURL(q string, archived bool, cursor string) string {
	v := url.Values{}
	if q != "" {
		v.Set("q", q)
	}
	if archived {
		v.Set("archived", "1")
	}
	v.Set("cursor", cursor)
	return "/?" + v.Encode()
}

func csrfOf(v ChatView) string {
	if v.Nav == nil {
		return ""
	}
	return v.Nav.CSRF
}

func itoa(n int) string { return strconv.Itoa(n) }

func joinComma(s []string) string { return strings.Join(s, ", ") }

// baseName is the last element of a path or URL.
func baseName(p string) string {
	p = strings.TrimRight(p, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// workspaceTitle explains a workspace chip.
func workspaceTitle(w WorkspaceView) string {
	switch w.Kind {
	case "dir":
		return "Working in the existing directory " + w.Path
	case "clone":
		return "A clone of " + w.Source + " in " + w.Path
	case "fork":
		return "A copy of the parent session's workspace in " + w.Path
	}
	return "A fresh workspace: " + w.Path
}

// imagesText counts images for people: "1 image", "3 images".
func imagesText(n int) string {
	if n == 1 {
		return "1 image"
	}
	return strconv.Itoa(n) + " images"
}
