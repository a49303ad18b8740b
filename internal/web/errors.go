package web

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
)

// APIError is what a client sees of a failure: a stable code and a safe
// message. The cause is logged, never sent.
type APIError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Cause   error  `json:"-"`
}

func (e *APIError) Error() string { return e.Code + ": " + e.Message }

func (e *APIError) Unwrap() error { return e.Cause }

// Errorf builds an APIError.
func apiError(status int, code, message string) *APIError {
	return &APIError{Status: status, Code: code, Message: message}
}

// Stable error codes.
const (
	CodeBadRequest   = "bad_request"
	CodeUnauthorized = "unauthorized"
	CodeForbidden    = "forbidden"
	CodeNotFound     = "not_found"
	CodeConflict     = "conflict"
	CodeTooLarge     = "too_large"
	CodeRateLimited  = "rate_limited"
	CodeInternal     = "internal"
	CodeUnavailable  = "unavailable"
)

// handleError renders every error the same way: JSON for the API, the
// WebSocket upgrade and JSON clients; the error page for browsers.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	ae := toAPIError(err)
	if ae.Status >= 500 {
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "code", ae.Code, "err", err)
	}
	if !wantsHTML(c) {
		_ = c.JSON(ae.Status, map[string]*APIError{"error": ae})
		return
	}
	_ = s.errorPage(c, ae.Status, http.StatusText(ae.Status), ae.Message)
}

func toAPIError(err error) *APIError {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		code := CodeInternal
		switch he.Code {
		case http.StatusBadRequest:
			code = CodeBadRequest
		case http.StatusUnauthorized:
			code = CodeUnauthorized
		case http.StatusForbidden:
			code = CodeForbidden
		case http.StatusNotFound:
			code = CodeNotFound
		case http.StatusMethodNotAllowed:
			code = CodeBadRequest
		case http.StatusRequestEntityTooLarge:
			code = CodeTooLarge
		case http.StatusTooManyRequests:
			code = CodeRateLimited
		}
		msg := http.StatusText(he.Code)
		if s, ok := he.Message.(string); ok && he.Code < 500 {
			msg = s
		}
		return &APIError{Status: he.Code, Code: code, Message: msg, Cause: err}
	}
	return &APIError{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error", Cause: err}
}
