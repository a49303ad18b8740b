package client

import (
	"errors"
	"fmt"
)

// Error is a coded error from the server: a REST error body or a refused
// WebSocket request. Status is the HTTP status (0 on the WebSocket).
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// RetryAfter is how many seconds to wait before sending the same
	// request again (a session moving between replicas); 0: not said.
	RetryAfter int `json:"retryAfter,omitempty"`
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s (%d): %s", e.Code, e.Status, e.Message)
	}
	return e.Code + ": " + e.Message
}

// CodeOf returns the code of an *Error in err's chain, or "".
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
