package importer

import (
	"errors"
	"fmt"

	"harness/internal/session"
)

// Code classifies a refused import.
type Code string

// Error codes.
const (
	CodeInvalidJSON Code = "invalid_json"    // a line is not one JSON object
	CodeVersion     Code = "unknown_version" // the header names a format version other than 0
	CodeSeq         Code = "bad_seq"         // a seq gap or duplicate
	CodeUnsupported Code = "unsupported"     // an event Harness cannot convert
	CodeInvalid     Code = "invalid"         // the converted log breaks a log rule or invariant
	CodeTooLarge    Code = "too_large"       // over MaxBytes or MaxEvents
	CodeRead        Code = "read"            // the input could not be read
	CodeEmpty       Code = "empty"           // nothing to import
)

// Error is a refused import: the 1-based physical line it concerns (0 when
// none) and why.
type Error struct {
	Code   Code
	Line   int
	Reason string
	Err    error // the underlying cause, when there is one
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Reason)
	}
	return e.Reason
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches any *Error with the same code, so that
// errors.Is(err, importer.ErrTooLarge) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Line == 0 && t.Reason == ""
}

// Sentinels for errors.Is.
var (
	ErrTooLarge    = &Error{Code: CodeTooLarge}
	ErrInvalidJSON = &Error{Code: CodeInvalidJSON}
	ErrVersion     = &Error{Code: CodeVersion}
	ErrSeq         = &Error{Code: CodeSeq}
	ErrUnsupported = &Error{Code: CodeUnsupported}
	ErrInvalid     = &Error{Code: CodeInvalid}
)

func lineErr(code Code, line int, format string, args ...any) *Error {
	return &Error{Code: code, Line: line, Reason: fmt.Sprintf(format, args...)}
}

// logErr reports a session refusal at a line, without the session's code
// prefix (the message already names the seq and type).
func logErr(line int, err error) *Error {
	reason := err.Error()
	var se *session.Error
	if errors.As(err, &se) {
		reason = se.Message
	}
	return &Error{Code: CodeInvalid, Line: line, Reason: reason, Err: err}
}
