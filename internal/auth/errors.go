package auth

import (
	"errors"
	"fmt"
	"time"
)

// Stable errors; every error the Service returns wraps at most one of them,
// so callers map them with errors.Is.
var (
	// ErrUnauthenticated: no valid credentials (anonymous, expired, revoked,
	// disabled account). HTTP 401.
	ErrUnauthenticated = errors.New("authentication required")
	// ErrForbidden: authenticated, may read the session, but the role does
	// not allow the action. HTTP 403.
	ErrForbidden = errors.New("forbidden")
	// ErrNotFound: no such session, user, token or link — or no read access
	// to the session (so its existence does not leak). HTTP 404.
	ErrNotFound = errors.New("not found")
	// ErrInvalidCredentials: the one message login failures get, whatever
	// the reason (unknown name, wrong password, disabled, no password).
	ErrInvalidCredentials = errors.New("invalid name or password")
	// ErrExists: a user with that name already exists. HTTP 409.
	ErrExists = errors.New("already exists")
	// ErrInvalidInput: a bad name, password, role or expiry. HTTP 400.
	ErrInvalidInput = errors.New("invalid input")
	// ErrLastAdmin: the change would leave no enabled admin who can log in.
	ErrLastAdmin = errors.New("would leave no enabled admin")
	// ErrExposed: a non-loopback bind without any user who can log in.
	ErrExposed = errors.New("refusing to listen on a non-loopback address without a user with a password")
)

// RateLimitError refuses a login attempt; RetryAfter is when the oldest
// counted failure leaves the window.
type RateLimitError struct {
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("too many failed logins; retry after %s", e.RetryAfter.Round(time.Second))
}

// InputError is a rejected input; Reason is safe to show to the user.
// errors.Is(err, ErrInvalidInput) holds for it.
type InputError struct {
	Reason string
}

func (e *InputError) Error() string { return "invalid input: " + e.Reason }

// Is makes an InputError match ErrInvalidInput.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }

// invalid builds an *InputError.
func invalid(format string, args ...any) error {
	return &InputError{Reason: fmt.Sprintf(format, args...)}
}
