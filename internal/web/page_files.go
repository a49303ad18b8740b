package web

import (
	"path"
	"strings"

	"github.com/labstack/echo/v4"

	"harness/internal/files"
	"harness/internal/render"
	"harness/internal/service"
	"harness/web/templates"
)

// The Files panel's fragments (see files.templ). Like the REST routes they
// need a user with read access; share links get none. Errors are the API's
// JSON errors when the script asks with Accept: application/json.

// GET /sessions/:id/files/tree?path= — one directory's entries.
func (s *Server) pageFileTree(c echo.Context) error {
	id := c.Param("id")
	l, err := s.svc.ListFiles(c.Request().Context(), ActorFrom(c), id, c.QueryParam("path"))
	if err != nil {
		return err
	}
	v := templates.FileTree{SessionID: id, Path: l.Path, Truncated: l.Truncated, Max: files.MaxEntries}
	for _, e := range l.Entries {
		v.Entries = append(v.Entries, templates.FileEntry{Name: e.Name, Path: e.Path, Kind: string(e.Kind), Size: e.Size})
	}
	return renderFragment(c, templates.FileTreeFragment(v))
}

// GET /sessions/:id/files/view?path= — one file, highlighted.
func (s *Server) pageFileView(c echo.Context) error {
	id := c.Param("id")
	fc, err := s.svc.ReadFile(c.Request().Context(), ActorFrom(c), id, c.QueryParam("path"))
	if err != nil {
		return err
	}
	v := templates.FileView{SessionID: id, Path: fc.Path, Size: fc.Size, Truncated: fc.Truncated, Shown: service.MaxFileView, Binary: fc.Binary}
	if !fc.Binary {
		v.HTML = highlightFile(s.ui.Markdown, fc.Path, fc.Content)
	}
	return renderFragment(c, templates.FileViewFragment(v))
}

// highlightFile renders content as one fenced code block in the language
// its name suggests, through the transcript's markdown renderer: chroma
// highlighting (plain above its size bound, or for an unknown language)
// and the same sanitiser as every other rendered HTML.
func highlightFile(md *render.Markdown, name, content string) string {
	content = strings.ToValidUTF8(content, "\uFFFD")
	if !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	// A fence longer than any backtick run in the content cannot be
	// closed by it.
	fence := strings.Repeat("`", max(3, longestRun(content, '`')+1))
	return md.Render(fence + fileLang(name) + "\n" + content + fence + "\n")
}

// fileLang is the highlighting language of a file name: its extension
// ("go", "py"), or the whole name for names without one ("Makefile",
// "Dockerfile"); chroma resolves both, and unknown ones stay plain.
func fileLang(name string) string {
	base := path.Base(name)
	if ext := path.Ext(base); ext != "" && ext != base {
		base = ext[1:]
	}
	return strings.ToLower(base)
}

// longestRun is the length of the longest run of b in s.
func longestRun(s string, b byte) int {
	best, cur := 0, 0
	for i := range len(s) {
		if s[i] == b {
			cur++
			best = max(best, cur)
		} else {
			cur = 0
		}
	}
	return best
}
