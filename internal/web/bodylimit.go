package web

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"harness/internal/service"
)

// Request body caps. They are set before routing: the CSRF guard, which
// runs before any route's own middleware, may parse a form (a multipart
// one spills its files to disk), so a cap set on a route would come after
// the body was read.
const (
	// maxAPIBody bounds every body without a cap of its own: REST
	// requests and the pages' forms.
	maxAPIBody = 1 << 20
	// lingerMax and lingerTime bound what is read and dropped of a body
	// refused by its Content-Length (refuseBody).
	lingerMax  = 64 << 20
	lingerTime = 10 * time.Second
)

// bodyCap is the most r's body may hold; 0 leaves the cap to the route
// (the page import answers with the sessions page; the replicas' routes
// bound their own).
func (s *Server) bodyCap(r *http.Request) int64 {
	p := r.URL.Path
	switch {
	case isAttachmentUpload(r) && s.svc != nil:
		return s.svc.AttachmentMax() + attachmentOverhead
	case r.Method == http.MethodPost && p == "/api/sessions/import":
		return maxImportBody
	case r.Method == http.MethodPost && p == "/sessions/import", strings.HasPrefix(p, "/internal/replica/"):
		return 0
	}
	return maxAPIBody
}

// limitBodies refuses with 413 too_large a body announced (Content-Length)
// over its cap before reading any of it, and caps the reader of the rest
// (a chunked body): reading past the cap fails with *http.MaxBytesError,
// which the handlers answer with 413 too.
func (s *Server) limitBodies(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		n := s.bodyCap(r)
		if n == 0 {
			return next(c)
		}
		if r.ContentLength > n {
			s.refuseBody(c, s.tooLargeFor(r, n))
			return nil
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, n)
		return next(c)
	}
}

// tooLargeFor is the refusal of a body over cap n.
func (s *Server) tooLargeFor(r *http.Request, n int64) error {
	if isAttachmentUpload(r) && s.svc != nil {
		return s.imageTooLarge()
	}
	return tooLarge(n)
}

func tooLarge(n int64) error {
	return service.NewError(service.CodeTooLarge, fmt.Sprintf("request body is larger than %d KiB", n>>10))
}

// refuseBody answers err for a body refused by its Content-Length, without
// having read it, and closes the connection. A client that asked for
// 100 Continue (curl, for a large upload) then never sends the body. One
// that sends it anyway, many scripts writing the whole body before they
// read the answer, would see the connection reset instead of the answer
// if it were closed with the body unread: so up to lingerMax of it is
// read and dropped, for at most lingerTime, after the answer is out.
func (s *Server) refuseBody(c echo.Context, err error) {
	r := c.Request()
	linger := r.Header.Get("Expect") == "" && r.ContentLength <= lingerMax
	rc := http.NewResponseController(c.Response())
	if linger {
		// Lets the body be read after the answer is written.
		linger = rc.EnableFullDuplex() == nil
	}
	c.Response().Header().Set("Connection", "close")
	c.Error(err)
	if !linger {
		return
	}
	_ = rc.Flush()
	_ = rc.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.Copy(io.Discard, r.Body)
}
