package fake

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Recorded is one chat request the server received.
type Recorded struct {
	// Index is the request's position among chat requests, from 0.
	Index  int         `json:"index"`
	Method string      `json:"method"`
	Path   string      `json:"path"`
	Header http.Header `json:"header"`
	// Body is the decoded JSON body (nil when it was not a JSON object).
	Body map[string]any `json:"body"`
	// Raw is the body as received.
	Raw []byte `json:"-"`
}

// WireMessage is one message of a chat request, as sent.
type WireMessage struct {
	Role             string         `json:"role"`
	Content          ContentText    `json:"content"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []WireToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string         `json:"tool_call_id,omitempty"`
	// Images are the message's image_url content parts, in order (not a
	// wire field: read from content).
	Images []WireImage `json:"-"`
}

// WireImage is one image_url content part: its URL as sent (a data: URL
// carries the bytes) and, for a data URL, the media type it names and the
// decoded bytes (nil when it is not base64 data).
type WireImage struct {
	URL       string
	MediaType string
	Data      []byte
}

// UnmarshalJSON reads the message and its image parts.
func (m *WireMessage) UnmarshalJSON(b []byte) error {
	type plain WireMessage
	var raw struct {
		plain
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*m = WireMessage(raw.plain)
	if len(raw.Content) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw.Content, &m.Content); err != nil {
		return err
	}
	if raw.Content[0] != '[' {
		return nil
	}
	var parts []struct {
		Type     string `json:"type"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(raw.Content, &parts); err != nil {
		return fmt.Errorf("message content: %w", err)
	}
	for _, p := range parts {
		if p.Type == "image_url" {
			m.Images = append(m.Images, decodeImageURL(p.ImageURL.URL))
		}
	}
	return nil
}

// decodeImageURL reads a data:<type>;base64,<data> URL; any other URL is
// kept as it is.
func decodeImageURL(u string) WireImage {
	img := WireImage{URL: u}
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return img
	}
	meta, data, ok := strings.Cut(rest, ",")
	mt, isB64 := strings.CutSuffix(meta, ";base64")
	if !ok || !isB64 {
		return img
	}
	img.MediaType = mt
	if b, err := base64.StdEncoding.DecodeString(data); err == nil {
		img.Data = b
	}
	return img
}

// WireToolCall is a tool call inside an assistant wire message.
type WireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// ContentText is message content as text: the string, or the joined text
// of an array of parts.
type ContentText string

func (c *ContentText) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*c = ""
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = ContentText(s)
		return nil
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(b, &parts); err != nil {
		return fmt.Errorf("message content: %w", err)
	}
	var sb strings.Builder
	for _, p := range parts {
		sb.WriteString(p.Text)
	}
	*c = ContentText(sb.String())
	return nil
}

// Text returns the content as text.
func (m WireMessage) Text() string { return string(m.Content) }

// Messages decodes the request's messages; nil when the body has none.
func (r Recorded) Messages() []WireMessage {
	var body struct {
		Messages []WireMessage `json:"messages"`
	}
	if err := json.Unmarshal(r.Raw, &body); err != nil {
		return nil
	}
	return body.Messages
}

// Model returns the requested model id.
func (r Recorded) Model() string {
	s, _ := r.Body["model"].(string)
	return s
}

// Requests returns a copy of every chat request received so far.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Recorded(nil), s.records...)
}

// waitTimeout bounds WaitRequests.
const waitTimeout = 10 * time.Second

// WaitRequests waits until at least n chat requests arrived (for at most
// waitTimeout) and returns them all; on timeout it returns what it has, so the caller's assertion
// fails instead of hanging.
func (s *Server) WaitRequests(n int) []Recorded {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	recs, _ := s.WaitRequestsContext(ctx, n)
	return recs
}

// WaitRequestsContext waits until at least n chat requests arrived or ctx
// is done, and returns the requests received so far.
func (s *Server) WaitRequestsContext(ctx context.Context, n int) ([]Recorded, error) {
	for {
		s.mu.Lock()
		if len(s.records) >= n {
			out := append([]Recorded(nil), s.records...)
			s.mu.Unlock()
			return out, nil
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return s.Requests(), fmt.Errorf("wait for %d requests: %w", n, context.Cause(ctx))
		}
	}
}

// record stores one request and wakes waiters.
func (s *Server) record(r *http.Request, raw []byte) Recorded {
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		body = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := Recorded{
		Index: s.count, Method: r.Method, Path: r.URL.Path,
		Header: r.Header.Clone(), Body: body, Raw: raw,
	}
	s.count++
	if !s.forget {
		s.records = append(s.records, rec)
	}
	close(s.changed)
	s.changed = make(chan struct{})
	return rec
}
