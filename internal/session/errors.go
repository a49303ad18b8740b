package session

import (
	"errors"
	"fmt"
)

// ErrorCode is a stable code for a refused log operation. Clients switch on it;
// messages are for people.
type ErrorCode string

const (
	CodeInvalidData      ErrorCode = "INVALID_DATA"       // data is not lossless JSON of the right shape
	CodeInvalidEnvelope  ErrorCode = "INVALID_ENVELOPE"   // type, time or envelope keys are wrong
	CodeNotContiguous    ErrorCode = "NOT_CONTIGUOUS"     // a stored log has a seq gap
	CodeUnknownEventType ErrorCode = "UNKNOWN_EVENT_TYPE" // required event of a type this reader does not know
	CodeInvalidSurface   ErrorCode = "INVALID_SURFACE"    // surface op or sourceEventSeqs break §1.4
	CodeInvalidMessage   ErrorCode = "INVALID_MESSAGE"    // a surface event's message has the wrong shape
	CodeOpenTurn         ErrorCode = "OPEN_TURN"          // fork boundary inside an open turn
	CodeInvalidBoundary  ErrorCode = "INVALID_BOUNDARY"   // fork boundary is not an existing seq
	CodeInvalidSplice    ErrorCode = "INVALID_SPLICE"     // an inbox splice does not apply
	CodeInvariant        ErrorCode = "INVARIANT_VIOLATION"
	// CodeReentrantAppend is reserved for wire compatibility with upstream: this
	// Log accepts appends made from subscriber callbacks, so it never returns it.
	CodeReentrantAppend ErrorCode = "REENTRANT_APPEND"
)

// Error is a coded refusal. The log is unchanged when an operation returns one.
type Error struct {
	Code    ErrorCode `json:"code"`
	Message string    `json:"message"`
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Is matches any *Error with the same code, so that
// errors.Is(err, &session.Error{Code: session.CodeOpenTurn}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// CodeOf returns the code of the first *Error in err's chain, or "" if none.
func CodeOf(err error) ErrorCode {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func errorf(code ErrorCode, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// atEvent prefixes err's message with the event's seq and type, keeping the
// code, so every refusal names where it happened.
func atEvent(ev Event, err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return errorf(CodeInvalidData, "seq %d (%s): %v", ev.Seq, ev.Type, err)
	}
	return errorf(e.Code, "seq %d (%s): %s", ev.Seq, ev.Type, e.Message)
}
