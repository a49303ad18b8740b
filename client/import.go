package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Import creates a session owned by the caller from a JSON-lines log read
// from r: a Harness export (see Export) or a DeepSeek Harness session log.
// A log the server cannot convert is an *Error with code bad_request whose
// message names the line; one over the server's cap (64 MiB) is too_large.
func (c *Client) Import(ctx context.Context, r io.Reader) (Session, error) {
	const path = "/api/sessions/import"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, r)
	if err != nil {
		return Session{}, err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("Accept", "application/json")
	c.authorize(req)
	res, err := c.http.Do(req)
	if err != nil {
		return Session{}, fmt.Errorf("POST %s: %w", path, err)
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		return Session{}, decodeError(res)
	}
	var s Session
	if err := json.NewDecoder(res.Body).Decode(&s); err != nil {
		return Session{}, fmt.Errorf("POST %s: decode answer: %w", path, err)
	}
	return s, nil
}
