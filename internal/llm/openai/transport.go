package openai

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
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
	parts, err := c.patch.apply(raw)
	if err != nil {
		return nil, fmt.Errorf("patch request body: %w", err)
	}
	var size int64
	for _, p := range parts {
		size += int64(len(p))
	}
	out.Body = &partsReader{parts: slices.Clone(parts)}
	out.ContentLength = size
	out.GetBody = func() (io.ReadCloser, error) { return &partsReader{parts: slices.Clone(parts)}, nil }
	return out, nil
}

// messagesNull is how go-openai encodes the request's (empty) messages. A
// string value cannot hold it unescaped, so its one occurrence is the
// top-level field.
var messagesNull = []byte(`"messages":null`)

// apply splices into the JSON body go-openai encoded (without messages) the
// encoded messages, `thinking` and an explicit zero temperature. It returns
// the body as parts to send in order: the history's segments are not
// copied, nor is anything decoded — the body of a long session is large, and
// every turn sends it.
func (p wirePatch) apply(raw []byte) ([][]byte, error) {
	at := bytes.Index(raw, messagesNull)
	end := bytes.LastIndexByte(raw, '}')
	if at < 0 || end < at {
		return nil, fmt.Errorf("the encoded request has no empty messages field to fill")
	}
	parts := make([][]byte, 0, 2*len(p.messages)+4)
	parts = append(parts, raw[:at], []byte(`"messages":[`))
	for i, m := range p.messages {
		if i > 0 {
			parts = append(parts, comma)
		}
		parts = appendExpanded(parts, m, p.images)
	}
	var tail []byte
	tail = append(tail, ']')
	tail = append(tail, raw[at+len(messagesNull):end]...)
	if p.thinking != "" {
		tail = append(tail, `,"thinking":{"type":"`+p.thinking+`"}`...)
	}
	if p.zeroTemperature {
		tail = append(tail, `,"temperature":0`...)
	}
	tail = append(tail, raw[end:]...)
	return append(parts, tail), nil
}

var comma = []byte{','}

// partsReader reads parts in order; WriteTo hands each to the writer whole,
// so net/http writes a large history without copying it.
type partsReader struct {
	parts [][]byte
}

func (r *partsReader) Read(b []byte) (int, error) {
	for len(r.parts) > 0 && len(r.parts[0]) == 0 {
		r.parts = r.parts[1:]
	}
	if len(r.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(b, r.parts[0])
	r.parts[0] = r.parts[0][n:]
	return n, nil
}

func (r *partsReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for len(r.parts) > 0 {
		n, err := w.Write(r.parts[0])
		total += int64(n)
		r.parts[0] = r.parts[0][n:]
		if err != nil {
			return total, err
		}
		r.parts = r.parts[1:]
	}
	return total, nil
}

func (r *partsReader) Close() error { return nil }
