package web

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"harness/internal/importer"
	"harness/internal/service"
)

// maxImportBody bounds POST /api/sessions/import: the importer's cap.
const maxImportBody = importer.MaxBytes

// maxImportUpload bounds POST /sessions/import: the cap plus room for the
// multipart framing and the CSRF field.
const maxImportUpload = importer.MaxBytes + 1<<20

// POST /api/sessions/import (a JSON-lines log: a Harness export or a
// DeepSeek Harness session log) → 201 session, owned by the caller. A log
// that cannot be converted is 400 bad_request with the line in the
// message; a body over the cap is 413 too_large; a full disk is 507
// insufficient_storage, with nothing left behind. While
// service.MaxConcurrentImports imports run, another is 503 unavailable
// with Retry-After, its body unread.
func (s *Server) apiImport(c echo.Context) error {
	sess, err := s.svc.Import(c.Request().Context(), ActorFrom(c), c.Request().Body)
	if err != nil {
		setImportRetryAfter(c, err)
		return err
	}
	return writeJSON(c, http.StatusCreated, sess)
}

// importPageRoutes registers the sessions page's Import control: POST
// /sessions/import, a multipart form with the file and the CSRF token. Its
// body limit is set before routing, since the CSRF guard reads the form.
func (s *Server) importPageRoutes(user echo.MiddlewareFunc) {
	s.e.Pre(limitImportUpload)
	s.e.POST("/sessions/import", s.pageImport, user)
}

// limitImportUpload caps the body of POST /sessions/import; an upload
// announced larger is answered with the sessions page and a message.
func limitImportUpload(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Method != http.MethodPost || r.URL.Path != "/sessions/import" {
			return next(c)
		}
		if r.ContentLength > maxImportUpload {
			return redirect(c, withFlash("/", flashImportTooLarge))
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, maxImportUpload)
		return next(c)
	}
}

// POST /sessions/import {file} — imports the uploaded log and opens the new
// session; a refused log re-shows the sessions page with the reason.
func (s *Server) pageImport(c echo.Context) error {
	fh, err := c.FormFile("file")
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return redirect(c, withFlash("/", flashImportTooLarge))
		}
		return redirect(c, withFlash("/", flashImportNoFile))
	}
	f, err := fh.Open()
	if err != nil {
		return s.pageError(c, err)
	}
	defer f.Close()
	sess, err := s.svc.Import(c.Request().Context(), ActorFrom(c), f)
	if err != nil {
		setImportRetryAfter(c, err)
		if e := service.AsError(err); e.Code == service.CodeBadRequest || e.Code == service.CodeTooLarge || e.Code == service.CodeInsufficientStorage || e.Code == service.CodeUnavailable {
			return s.renderSessions(c, e.Code.HTTPStatus(), "Import failed: "+e.Message)
		}
		return s.pageError(c, err)
	}
	return redirect(c, "/sessions/"+sess.ID)
}

// setImportRetryAfter tells a client refused for the import limit when to
// try again.
func setImportRetryAfter(c echo.Context, err error) {
	if errors.Is(err, service.ErrImportsBusy) {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(service.ImportRetryAfter/time.Second)))
	}
}
