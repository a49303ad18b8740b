package llm

import (
	"errors"
	"fmt"
)

// Code is a stable failure code. Clients switch on it; messages are for people.
type Code string

const (
	CodeAuth                  Code = "AUTH"
	CodeQuota                 Code = "QUOTA"
	CodeRateLimit             Code = "RATE_LIMIT"
	CodeServer                Code = "SERVER"
	CodeContextWindowExceeded Code = "CONTEXT_WINDOW_EXCEEDED"
	CodeInvalidRequest        Code = "INVALID_REQUEST"
	CodeTimeout               Code = "TIMEOUT"
	CodeTransport             Code = "TRANSPORT"
	CodeStreamClosed          Code = "STREAM_CLOSED"
	CodeMalformedResponse     Code = "MALFORMED_RESPONSE"
	CodeEmptyResponse         Code = "EMPTY_RESPONSE"
	CodeAborted               Code = "ABORTED"
	CodeContentFilter         Code = "CONTENT_FILTER"
	CodeMissingCredential     Code = "MISSING_CREDENTIAL"
	CodeNoProvider            Code = "NO_PROVIDER"
	CodeUnsupportedEffort     Code = "UNSUPPORTED_REASONING_EFFORT"
	CodeUnsupportedContent    Code = "UNSUPPORTED_CONTENT"
	CodeUnknown               Code = "UNKNOWN"
)

// Failure is a structured model failure. It is durable (turn/end{error},
// llm/retry) and shown to users, so Message must never contain a credential.
type Failure struct {
	Message string `json:"message"`
	Code    Code   `json:"code"`
	Status  int    `json:"status,omitempty"`
	// RetryAfterMs is the provider's Retry-After hint, positive only.
	RetryAfterMs int64  `json:"providerRetryAfterMs,omitempty"`
	RequestID    string `json:"requestId,omitempty"`
}

// Error makes *Failure an error, so adapters can return it and callers can
// recover it with errors.As.
func (f *Failure) Error() string {
	if f.Status != 0 {
		return fmt.Sprintf("%s (%d): %s", f.Code, f.Status, f.Message)
	}
	return fmt.Sprintf("%s: %s", f.Code, f.Message)
}

// Errorf builds a failure with a formatted message.
func Errorf(code Code, format string, args ...any) *Failure {
	return &Failure{Code: code, Message: fmt.Sprintf(format, args...)}
}

// AsFailure converts any error into a Failure: a wrapped *Failure is returned
// as is; anything else becomes code UNKNOWN with the error chain as message.
func AsFailure(err error) *Failure {
	if err == nil {
		return nil
	}
	var f *Failure
	if errors.As(err, &f) {
		return f
	}
	return &Failure{Code: CodeUnknown, Message: err.Error()}
}
