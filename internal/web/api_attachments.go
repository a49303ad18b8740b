package web

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"harness/internal/auth"
	"harness/internal/service"
)

// attachmentOverhead is the room an upload's body has beyond the image
// cap: the multipart framing and headers.
const attachmentOverhead = 64 << 10

// attachmentBase is the path the page reaches the session's images under
// (render.FoldOptions.AttachmentBase): a share-link page's own route, else
// the signed-in route.
func attachmentBase(c echo.Context, id string) string {
	if tok := c.Param("token"); tok != "" {
		return "/s/" + tok
	}
	return "/sessions/" + id
}

// isAttachmentUpload matches POST /api/sessions/:id/attachments, whose
// body cap is the image cap's (bodyCap).
func isAttachmentUpload(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/sessions/")
	id, tail, _ := strings.Cut(rest, "/")
	return ok && id != "" && tail == "attachments"
}

func (s *Server) imageTooLarge() error {
	return service.Errorf(service.CodeTooLarge, "the image is larger than the limit of %d KiB", s.svc.AttachmentMax()>>10)
}

// POST /api/sessions/:id/attachments → 201 attachment. The image is the
// multipart field "file" (the browser's upload), or the whole body with
// ?name= for scripts. Whoever may send to the session may upload; the
// type comes from the bytes.
func (s *Server) apiUploadAttachment(c echo.Context) error {
	ctx, a, id := c.Request().Context(), ActorFrom(c), c.Param("id")
	// Refuse before reading the image when the caller may not send here.
	if _, err := s.svc.Authorize(ctx, a, id, auth.ActionWrite); err != nil {
		return err
	}
	name, body, closeBody, err := s.uploadedImage(c)
	if err != nil {
		return err
	}
	defer closeBody()
	info, err := s.svc.UploadAttachment(ctx, a, id, name, body)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusCreated, info)
}

// uploadedImage finds the upload's file: the multipart field "file", or
// the body itself.
func (s *Server) uploadedImage(c echo.Context) (string, io.Reader, func(), error) {
	mt, _, _ := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType))
	if mt != echo.MIMEMultipartForm {
		return c.QueryParam("name"), c.Request().Body, func() {}, nil
	}
	fh, err := c.FormFile("file")
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return "", nil, nil, s.imageTooLarge()
		}
		return "", nil, nil, service.NewError(service.CodeBadRequest, `send the image as the multipart field "file"`)
	}
	f, err := fh.Open()
	if err != nil {
		return "", nil, nil, err
	}
	return fh.Filename, f, func() { _ = f.Close() }, nil
}

// GET /api/sessions/:id/attachments/:aid and /sessions/:id/attachments/:aid
// → the image, for anyone who may read the session.
func (s *Server) getAttachment(c echo.Context) error {
	return s.serveAttachment(c, ActorFrom(c), c.Param("id"))
}

// GET /s/:token/attachments/:aid → the image, through a live share link.
func (s *Server) shareAttachment(c echo.Context) error {
	a, ok, err := s.shareActor(c.Request().Context(), c.Param("token"))
	if !ok {
		return service.NewError(service.CodeNotFound, "share link is not valid")
	}
	if err != nil {
		return err
	}
	return s.serveAttachment(c, a, a.ShareSessionID)
}

// serveAttachment writes an image with the type sniffed at upload,
// never sniffed again by the browser, confined like a download (no script
// runs in it even opened on its own), under its safe name (service.SafeName),
// and inline only when it is an image type browsers show; anything else
// would be a download.
func (s *Server) serveAttachment(c echo.Context, a *auth.Actor, id string) error {
	d, err := s.svc.Attachment(c.Request().Context(), a, id, c.Param("aid"))
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, d.MediaType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set(echo.HeaderContentDisposition, disposition(d.Name, d.MediaType))
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	// Revalidated on every use (the ETag makes that a 304), so a reader
	// who lost access stops getting it from the server.
	h.Set("Cache-Control", "private, no-cache")
	h.Set("ETag", `"`+d.SHA256+`"`)
	http.ServeContent(c.Response(), c.Request(), "", d.CreatedAt, bytes.NewReader(d.Data))
	return nil
}

// disposition is the Content-Disposition of a stored file, under its safe
// name: inline for the image types the page shows, attachment for
// anything else.
func disposition(name, mediaType string) string {
	name = service.SafeName(name, mediaType)
	if name == "" {
		name = service.SafeName("image", mediaType)
	}
	if !service.IsImageType(mediaType) {
		return attachment(name)
	}
	return "inline" + strings.TrimPrefix(attachment(name), "attachment")
}
