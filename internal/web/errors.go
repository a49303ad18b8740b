package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"harness/internal/service"
)

// handleError renders every error the same way: JSON for the API, the
// WebSocket upgrade and JSON clients; the error page for browsers. Handlers
// return errors as they get them: a service error, an auth or store error
// or one of echo's all find their code here, so none answers 500 for want
// of a wrap.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	e, status := classify(err)
	if status >= 500 {
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "code", e.Code, "err", err)
	}
	if e.RetryAfter > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if !wantsHTML(c) {
		_ = c.JSON(status, map[string]*service.Error{"error": e})
		return
	}
	title, msg := errorTexts(status, e.Message)
	_ = s.errorPage(c, status, title, msg)
}

// errorTexts are the error page's heading and message: the status in words
// and the error's message, said once. A message that only repeats the
// status (echo's "Not Found") is dropped, and one that already says it
// ("Session not found") becomes the heading.
func errorTexts(status int, msg string) (title, text string) {
	title = sentenceCase(http.StatusText(status))
	short := strings.TrimSuffix(msg, ".")
	switch {
	case strings.EqualFold(short, title):
		msg = ""
	case len(short) <= 60 && strings.Contains(strings.ToLower(short), strings.ToLower(title)):
		return short, ""
	}
	if msg == "" && status == http.StatusNotFound {
		msg = "There is no page at this address."
	}
	return title, msg
}

// sentenceCase writes "Not Found" as "Not found".
func sentenceCase(s string) string {
	if s == "" {
		return s
	}
	return s[:1] + strings.ToLower(s[1:])
}

// classify maps any error to what the client sees and its HTTP status: a
// *service.Error as it is; echo's *echo.HTTPError (routing, body limits)
// keeps its status and gets the code of that status; the known errors of
// the domain through service.AsError; anything else is internal, with a
// safe message (the cause is logged, never sent).
func classify(err error) (*service.Error, int) {
	var se *service.Error
	if errors.As(err, &se) {
		return se, se.Code.HTTPStatus()
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg := http.StatusText(he.Code)
		if m, ok := he.Message.(string); ok && he.Code < 500 {
			msg = m
		}
		return &service.Error{Code: codeOfStatus(he.Code), Message: msg, Err: err}, he.Code
	}
	e := service.AsError(err)
	return e, e.Code.HTTPStatus()
}

// codeOfStatus is the code of one of echo's statuses.
func codeOfStatus(status int) service.Code {
	switch status {
	case http.StatusBadRequest, http.StatusMethodNotAllowed:
		return service.CodeBadRequest
	case http.StatusUnauthorized:
		return service.CodeUnauthorized
	case http.StatusForbidden:
		return service.CodeForbidden
	case http.StatusNotFound:
		return service.CodeNotFound
	case http.StatusRequestEntityTooLarge:
		return service.CodeTooLarge
	case http.StatusTooManyRequests:
		return service.CodeRateLimited
	case http.StatusInsufficientStorage:
		return service.CodeInsufficientStorage
	}
	return service.CodeInternal
}
