package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Why a RoundTripper: go-openai is the client, but it cannot express parts
// of the DeepSeek wire. Its request struct has no top-level `thinking`, drops
// an explicit temperature 0 and omits an empty `content` (DeepSeek wants ""
// on tool-call-only and reasoning-only assistant turns, never a missing
// field); it sets no per-request headers; its stream reader reports EOF the
// same way with or without `[DONE]` and counts SSE comments (keep-alive
// pings) against its empty-line limit. The transport below patches the
// encoded body, adds the headers, watches every outstanding read for
// idleness and passes the SSE body through a line filter that notes
// `[DONE]` and drops comments after counting them as activity. Everything
// else (encoding, SSE framing, error bodies) stays go-openai's.

// callKey carries the per-call state from Stream to the transport.
type callKey struct{}

// call is the state of one Stream call shared with the transport. All of it
// is touched only on the goroutine running Stream: http.Client.Do calls
// RoundTrip synchronously and go-openai reads the body on the caller.
type call struct {
	patch  wirePatch
	header http.Header
	dog    *watchdog

	reached    bool // the request got past go-openai's own validation
	status     int
	respStatus string
	respHeader http.Header
	body       *sseBody
}

func withCall(ctx context.Context, c *call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// transport applies a call's patch and observes its response.
type transport struct {
	base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	c, _ := req.Context().Value(callKey{}).(*call)
	if c == nil {
		return t.base.RoundTrip(req)
	}
	c.reached = true
	out, err := c.prepare(req)
	if err != nil {
		return nil, err
	}
	c.dog.arm()
	resp, err := t.base.RoundTrip(out)
	c.dog.disarm()
	if err != nil {
		return nil, err
	}
	c.status, c.respStatus, c.respHeader = resp.StatusCode, resp.Status, resp.Header
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		c.body = newSSEBody(resp.Body, c.dog)
		resp.Body = c.body
	}
	return resp, nil
}

// prepare returns a copy of req with the patched body and extra headers.
func (c *call) prepare(req *http.Request) (*http.Request, error) {
	out := req.Clone(req.Context())
	for k, vs := range c.header {
		out.Header[k] = vs
	}
	if req.Body == nil {
		return out, nil
	}
	raw, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	body, err := c.patch.apply(raw)
	if err != nil {
		return nil, fmt.Errorf("patch request body: %w", err)
	}
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return out, nil
}

// apply edits the JSON body go-openai encoded: it adds `thinking`, an
// explicit zero temperature, and "content": "" on messages without content.
func (p wirePatch) apply(raw []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("decode body: %w", err)
	}
	if p.thinking != "" {
		top["thinking"] = json.RawMessage(`{"type":"` + p.thinking + `"}`)
	}
	if p.zeroTemperature {
		top["temperature"] = json.RawMessage(`0`)
	}
	var msgs []map[string]json.RawMessage
	if err := json.Unmarshal(top["messages"], &msgs); err != nil {
		return nil, fmt.Errorf("decode messages: %w", err)
	}
	changed := false
	for _, m := range msgs {
		if _, ok := m["content"]; !ok {
			m["content"] = json.RawMessage(`""`)
			changed = true
		}
	}
	if changed {
		enc, err := json.Marshal(msgs)
		if err != nil {
			return nil, fmt.Errorf("encode messages: %w", err)
		}
		top["messages"] = enc
	}
	return json.Marshal(top)
}
