package service

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"harness/internal/auth"
	"harness/internal/driver"
	"harness/internal/models"
	"harness/internal/session"
)

// Code is a stable error code; clients switch on it. It is the one error
// vocabulary from the service to the HTTP edge: REST answers, pages and
// WebSocket replies all carry these codes.
type Code string

// Error codes.
const (
	CodeBadRequest   Code = "bad_request"
	CodeUnauthorized Code = "unauthorized"
	CodeForbidden    Code = "forbidden"
	CodeNotFound     Code = "not_found"
	CodeConflict     Code = "conflict"
	CodeTooLarge     Code = "too_large"
	CodeBusy         Code = "busy"
	CodeNotPending   Code = "not_pending"
	CodeItemNotFound Code = "item_not_found"
	CodeBadAnswer    Code = "bad_answer"
	CodeOpenTurn     Code = "open_turn"
	CodeUnknownOp    Code = "unknown_op"
	CodeUnavailable  Code = "unavailable"
	// CodeCompactionFailed: a manual compaction could not summarize (the
	// model failed, or its summary was unusable); nothing was replaced.
	CodeCompactionFailed Code = "compaction_failed"
	// CodeWorkspaceNotReady: the session's workspace is still being
	// prepared (a clone); input waits until it is ready.
	CodeWorkspaceNotReady Code = "workspace_not_ready"
	// CodeUnsupportedMedia: an upload that is not an image of an accepted
	// type (PNG, JPEG, GIF, WebP), judged by its bytes, or whose canvas is
	// too large to decode.
	CodeUnsupportedMedia Code = "unsupported_media_type"
	// CodeUnsupportedContent: the session's model route cannot take what
	// was sent (images on a route without image input).
	CodeUnsupportedContent Code = "unsupported_content"
	// CodeRateLimited: too many attempts (logins); try again later.
	CodeRateLimited Code = "rate_limited"
	// CodeCSRF: a form post or API call from a browser without its CSRF
	// token (or with a wrong one).
	CodeCSRF Code = "csrf"
	// CodeInsufficientStorage: the server's disk is full (models.IsDiskFull);
	// what was refused left nothing behind.
	CodeInsufficientStorage Code = "insufficient_storage"
	CodeInternal            Code = "internal"
)

// diskFullMessage is what a person reads when the server's disk is full.
const diskFullMessage = "the server's disk is full, so nothing was stored; try again once space is freed"

// HTTPStatus is the status a REST response carries for the code.
func (c Code) HTTPStatus() int {
	switch c {
	case CodeBadRequest, CodeBadAnswer, CodeUnknownOp:
		return http.StatusBadRequest
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeForbidden, CodeCSRF:
		return http.StatusForbidden
	case CodeNotFound, CodeItemNotFound:
		return http.StatusNotFound
	case CodeConflict, CodeBusy, CodeNotPending, CodeOpenTurn, CodeWorkspaceNotReady:
		return http.StatusConflict
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeUnsupportedMedia:
		return http.StatusUnsupportedMediaType
	case CodeUnsupportedContent:
		return http.StatusUnprocessableEntity
	case CodeRateLimited:
		return http.StatusTooManyRequests
	case CodeUnavailable:
		return http.StatusServiceUnavailable
	case CodeCompactionFailed:
		return http.StatusBadGateway
	case CodeInsufficientStorage:
		return http.StatusInsufficientStorage
	default:
		return http.StatusInternalServerError
	}
}

// Error is a failure as a client sees it: a stable code and a safe message.
// The cause is for logs only.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// RetryAfter is how many seconds to wait before sending the same
	// request again (a session moving between replicas); 0: not said.
	// REST sends it as the Retry-After header too.
	RetryAfter int   `json:"retryAfter,omitempty"`
	Err        error `json:"-"`
}

func (e *Error) Error() string {
	if e.Err != nil {
		return string(e.Code) + ": " + e.Message + ": " + e.Err.Error()
	}
	return string(e.Code) + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// NewError builds an *Error with a message that is not a format (it may
// hold a percent sign).
func NewError(code Code, msg string) *Error {
	return &Error{Code: code, Message: msg}
}

func wrap(code Code, msg string, err error) *Error {
	return &Error{Code: code, Message: msg, Err: err}
}

// AsError classifies any error into an *Error: an *Error in the chain is
// returned as is; the known errors of auth, models, driver and session map
// to their codes; anything else is internal, with a generic message. The
// HTTP edge runs every error a handler returns through it, so a handler
// never needs to wrap a service error itself.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var in *auth.InputError
	var rl *auth.RateLimitError
	var no *driver.NotOwnerError
	switch {
	case errors.As(err, &no):
		// The edges forward such a request to the owner (ws, web) and wait
		// for a takeover when it cannot be reached; this is the answer when
		// none completed in time. The owner is not named: it may be dead,
		// and any replica reaches the session once it moved.
		return Moving(err)
	case errors.Is(err, driver.ErrUnreachable):
		return wrap(CodeUnavailable, "this replica cannot reach the session's workspace; try another", err)
	case errors.As(err, &rl):
		return wrap(CodeRateLimited, "too many attempts", err)
	case errors.As(err, &in):
		return wrap(CodeBadRequest, in.Reason, err)
	case errors.Is(err, auth.ErrUnauthenticated), errors.Is(err, auth.ErrInvalidCredentials):
		return wrap(CodeUnauthorized, "authentication required", err)
	case errors.Is(err, auth.ErrForbidden):
		return wrap(CodeForbidden, "not allowed", err)
	case errors.Is(err, auth.ErrNotFound), errors.Is(err, models.ErrNotFound):
		return wrap(CodeNotFound, "not found", err)
	case errors.Is(err, auth.ErrLastAdmin):
		return wrap(CodeConflict, "that would leave no enabled admin", err)
	case errors.Is(err, auth.ErrExists), errors.Is(err, models.ErrExists):
		return wrap(CodeConflict, "already exists", err)
	case errors.Is(err, driver.ErrItemNotFound):
		return wrap(CodeItemNotFound, "queue item not found (it may have been claimed already)", err)
	case errors.Is(err, driver.ErrNotPending):
		return wrap(CodeNotPending, "nothing is pending under that id (it may have been answered already)", err)
	case errors.Is(err, driver.ErrBadAnswer):
		return wrap(CodeBadAnswer, err.Error(), err)
	case errors.Is(err, driver.ErrEmptyMessage):
		return wrap(CodeBadRequest, "message is empty", err)
	case errors.Is(err, driver.ErrUnknownModel):
		return wrap(CodeBadRequest, "unknown provider", err)
	case errors.Is(err, driver.ErrInvalidMode):
		return wrap(CodeBadRequest, "invalid permission mode", err)
	case errors.Is(err, driver.ErrInvalidEffort):
		return wrap(CodeBadRequest, "invalid reasoning effort", err)
	case errors.Is(err, driver.ErrBusy), errors.Is(err, driver.ErrNotIdleForTask):
		return wrap(CodeBusy, "the agent is busy", err)
	case errors.Is(err, driver.ErrSubagent):
		return wrap(CodeForbidden, "a subagent's session is driven by its parent's task call", err)
	case errors.Is(err, driver.ErrDuplicateID):
		return wrap(CodeConflict, "a pending message has that id", err)
	case errors.Is(err, models.ErrFenced):
		return wrap(CodeUnavailable, "the session moved to another replica; this change was not stored: send it again", err)
	case errors.Is(err, driver.ErrKeyConflict):
		return wrap(CodeConflict, "that clientId already names a message with other content; use a new clientId for a new message", err)
	// A send taken back kept nothing, even though its flush failed; a
	// change accepted in memory was kept, even while the store refuses
	// writes (a repeat of a kept send): the order matters.
	case errors.Is(err, driver.ErrNotStored):
		return wrap(CodeUnavailable, nothingKept(err), err)
	case errors.Is(err, driver.ErrNotDurable):
		return wrap(CodeUnavailable, "the server could not store this yet ("+storeCause(err)+"): retry (a message with the same clientId); it is applied once", err)
	case errors.Is(err, models.ErrNotWritable):
		return wrap(CodeUnavailable, nothingKept(err), err)
	case errors.Is(err, driver.ErrDisposed):
		return wrap(CodeUnavailable, "the session is shutting down or was deleted", err)
	case session.CodeOf(err) == session.CodeOpenTurn:
		return wrap(CodeOpenTurn, "that point is inside a turn; fork at a completed turn boundary", err)
	case session.CodeOf(err) == session.CodeInvalidBoundary:
		return wrap(CodeBadRequest, "no event with that seq", err)
	case models.IsDiskFull(err):
		return wrap(CodeInsufficientStorage, diskFullMessage, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return wrap(CodeUnavailable, "request cancelled or timed out", err)
	}
	return wrap(CodeInternal, "internal error", err)
}

// Moving is the answer to a command for a session whose owner could not be
// reached and that no other replica took over in time: the same request
// (same idempotency key) may be sent again to any replica.
func Moving(err error) *Error {
	e := wrap(CodeUnavailable, "the session is moving to another replica; send the same request again in a moment", err)
	e.RetryAfter = 1
	return e
}

// OwnerAddr reports whether err says the session runs on another replica,
// and that replica's advertised address (for forwarding the request).
func OwnerAddr(err error) (string, bool) {
	_, addr, ok := Owner(err)
	return addr, ok
}

// Owner is OwnerAddr with the session's id.
func Owner(err error) (session, addr string, ok bool) {
	var no *driver.NotOwnerError
	if !errors.As(err, &no) || no.Addr == "" {
		return "", "", false
	}
	return no.Session, no.Addr, true
}

// DiskFull reports whether err says the server's disk is full.
func DiskFull(err error) bool { return models.IsDiskFull(err) }

// WriteLocked reports whether err says another process holds the
// database's write lock.
func WriteLocked(err error) bool { return models.IsWriteLocked(err) }

func nothingKept(err error) string {
	return "the server cannot store anything now (" + storeCause(err) + "); nothing was kept: retry later (a message with the same clientId)"
}

// storeCause names why the database refused a write, for a client.
func storeCause(err error) string {
	if models.IsDiskFull(err) {
		return "its disk is full"
	}
	if models.IsWriteLocked(err) {
		return "its database does not take writes: another process holds its write lock"
	}
	return "its database does not take writes"
}
