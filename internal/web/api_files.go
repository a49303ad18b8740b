package web

import (
	"mime"
	"net/http"
	"path"
	"strings"
	"unicode"

	"github.com/labstack/echo/v4"
)

// GET /api/sessions/:id/files?path= → 200 {path, entries: [{name, path,
// kind, size, mtime}], truncated}: one directory of the workspace
// (default: its root), directories first.
func (s *Server) apiListFiles(c echo.Context) error {
	l, err := s.svc.ListFiles(c.Request().Context(), ActorFrom(c), c.Param("id"), c.QueryParam("path"))
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, l)
}

// GET /api/sessions/:id/files/content?path= → 200 {path, size, mtime,
// truncated, binary, content}: the first 256 KiB of a file as text.
func (s *Server) apiFileContent(c echo.Context) error {
	fc, err := s.svc.ReadFile(c.Request().Context(), ActorFrom(c), c.Param("id"), c.QueryParam("path"))
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, fc)
}

// GET /api/sessions/:id/files/download?path= (and the page route
// /sessions/:id/files/download) → 200 the file's bytes as an attachment,
// never rendered by the browser (octet-stream, nosniff). Ranges and
// If-Modified-Since are honoured.
func (s *Server) downloadFile(c echo.Context) error {
	f, info, err := s.svc.OpenFile(c.Request().Context(), ActorFrom(c), c.Param("id"), c.QueryParam("path"))
	if err != nil {
		return err
	}
	defer f.Close()
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "application/octet-stream")
	h.Set(echo.HeaderContentDisposition, attachment(info.Name()))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	http.ServeContent(c.Response(), c.Request(), "", info.ModTime(), f)
	return nil
}

// attachment is a Content-Disposition for a download named name: the
// name's control and path characters are replaced, and non-ASCII names
// are RFC 2231-encoded (the filename* parameter) by mime.FormatMediaType.
func attachment(name string) string {
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '/' || r == '\\' || r == unicode.ReplacementChar {
			return '_'
		}
		return r
	}, path.Base(name))
	if name == "" || name == "." || name == ".." {
		name = "download"
	}
	if v := mime.FormatMediaType("attachment", map[string]string{"filename": name}); v != "" {
		return v
	}
	return `attachment; filename="download"`
}
