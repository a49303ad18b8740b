package fake

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// frames expands a reply into its deltas.
func (r Reply) frames(request int) []Frame {
	if len(r.Frames) > 0 {
		return r.Frames
	}
	var out []Frame
	for _, s := range split(r.Reasoning, r.Chunks) {
		out = append(out, Frame{Reasoning: s})
	}
	for _, s := range split(r.Text, r.Chunks) {
		out = append(out, Frame{Text: s})
	}
	for i, tc := range r.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", request, i)
		}
		// Like DeepSeek: id and name first with empty arguments, then the
		// argument fragments.
		out = append(out, Frame{Tool: &ToolFragment{Index: i, ID: id, Name: tc.Name}})
		for _, a := range splitN(tc.Arguments, max(1, tc.Fragments)) {
			out = append(out, Frame{Tool: &ToolFragment{Index: i, Arguments: a}})
		}
	}
	for i := 1; i < len(out); i++ {
		out[i].Delay = r.Delay
	}
	return out
}

// finishReason is the wire finish_reason, or nil for "none".
func (r Reply) finishReason() *string {
	switch {
	case r.Finish == "none":
		return nil
	case r.Finish != "":
		return strptr(r.Finish)
	}
	for _, f := range r.Frames {
		if f.Tool != nil {
			return strptr("tool_calls")
		}
	}
	if len(r.ToolCalls) > 0 {
		return strptr("tool_calls")
	}
	return strptr("stop")
}

// usage is the reply's usage, computed when not scripted: about four bytes
// per token, deterministic for a given request and reply.
func (r Reply) usage(frames []Frame, requestBytes int) Usage {
	if r.Usage != nil {
		return *r.Usage
	}
	var out, reasoning int
	for _, f := range frames {
		out += len(f.Text) + len(f.Reasoning)
		reasoning += len(f.Reasoning)
		if f.Tool != nil {
			out += len(f.Tool.Arguments) + len(f.Tool.Name)
		}
	}
	return Usage{
		PromptTokens:     int64(requestBytes/4 + 1),
		CompletionTokens: int64(out/4 + 1),
		ReasoningTokens:  int64(reasoning / 4),
	}
}

// stream answers one chat request with reply.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, rec Recorded, reply Reply) {
	ctx := r.Context()
	f := reply.Fault
	if f != nil && f.After < 0 {
		nf := *f
		nf.After = 0
		f = &nf
	}
	if f != nil && f.Kind == FaultStall && f.BeforeHeaders {
		if !s.stall(ctx, w, nil, f) {
			return
		}
	}
	if e := reply.Error; e != nil {
		writeHTTPError(w, e)
		return
	}
	flusher, _ := w.(http.Flusher)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Request-Id", fmt.Sprintf("fake-%d", rec.Index))
	w.WriteHeader(http.StatusOK)

	role, events, delays := plan(rec, reply)
	var buf bytes.Buffer
	send := func(c wireChunk) bool {
		buf.Reset()
		buf.WriteString("data: ")
		if err := json.NewEncoder(&buf).Encode(c); err != nil {
			s.log.Error("fake encode chunk", "err", err)
			return false
		}
		buf.WriteString("\n")
		_, err := w.Write(buf.Bytes())
		return err == nil
	}
	if !send(role) {
		return
	}
	flush()

	for i := 0; i <= len(events); i++ {
		if f != nil && !f.BeforeHeaders && (f.After == i || (i == len(events) && f.After > i)) {
			flush()
			if !s.fault(ctx, w, flush, f) {
				return
			}
		}
		if i == len(events) {
			break
		}
		if d := s.scaled(delays[i]); d > 0 {
			flush()
			if !s.sleep(ctx, d) {
				return
			}
		}
		if !send(events[i]) {
			return
		}
	}
	_, _ = w.Write([]byte("data: [DONE]\n\n"))
	flush()
}

// plan returns the opening role chunk, then the data chunks (deltas,
// finish, usage) with the pause before each.
func plan(rec Recorded, reply Reply) (role wireChunk, events []wireChunk, delays []time.Duration) {
	model := rec.Model()
	if model == "" {
		model = "fake-model"
	}
	base := wireChunk{
		ID: fmt.Sprintf("chatcmpl-fake-%d", rec.Index), Object: "chat.completion.chunk",
		Created: time.Now().Unix(), Model: model, SystemFingerprint: "fp_harness_fake",
	}
	choice := func(d wireDelta, finish *string) wireChunk {
		c := base
		c.Choices = []wireChoice{{Delta: d, FinishReason: finish}}
		return c
	}

	frames := reply.frames(rec.Index)
	role = choice(wireDelta{Role: "assistant", Content: strptr("")}, nil)
	if hasReasoning(frames) || thinkingRequested(rec.Body) {
		// DeepSeek in thinking mode opens with an empty reasoning delta
		// and null content.
		role = choice(wireDelta{Role: "assistant", ReasoningContent: strptr("")}, nil)
	}

	events = make([]wireChunk, 0, len(frames)+2)
	delays = make([]time.Duration, 0, len(frames)+2)
	for _, fr := range frames {
		events = append(events, choice(frame(fr), nil))
		delays = append(delays, fr.Delay)
	}
	fin := choice(wireDelta{Content: strptr("")}, reply.finishReason())
	if reply.FinishUsage != nil {
		fin.Usage = reply.FinishUsage.wire()
	}
	events = append(events, fin)
	delays = append(delays, 0)
	if !reply.NoUsage {
		u := base
		u.Choices = []wireChoice{}
		u.Usage = reply.usage(frames, len(rec.Raw)).wire()
		events = append(events, u)
		delays = append(delays, 0)
	}
	return role, events, delays
}

// fault applies f; false means the response is over.
func (s *Server) fault(ctx context.Context, w http.ResponseWriter, flush func(), f *Fault) bool {
	switch f.Kind {
	case FaultStall:
		return s.stall(ctx, w, flush, f)
	case FaultCut:
		return false
	case FaultMalformed:
		_, err := w.Write([]byte("data: {\"choices\": [\n\n"))
		flush()
		return err == nil
	case FaultError:
		msg := f.Message
		if msg == "" {
			msg = "fake in-stream error"
		}
		b, _ := json.Marshal(errorBody(msg, "server_error", ""))
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		flush()
		return false
	default:
		s.log.Warn("fake: unknown fault kind", "kind", f.Kind)
		return true
	}
}

// stall waits for f.For (forever when 0) unless the client goes away or
// the server closes, writing an SSE comment every f.Ping when flush is set.
func (s *Server) stall(ctx context.Context, w http.ResponseWriter, flush func(), f *Fault) bool {
	var end <-chan time.Time
	if f.For > 0 {
		t := time.NewTimer(f.For)
		defer t.Stop()
		end = t.C
	}
	var ping <-chan time.Time
	if f.Ping > 0 && flush != nil {
		tk := time.NewTicker(f.Ping)
		defer tk.Stop()
		ping = tk.C
	}
	for {
		select {
		case <-end:
			return true
		case <-ping:
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
				return false
			}
			flush()
		case <-ctx.Done():
			return false
		case <-s.done:
			return false
		}
	}
}

func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}

func (s *Server) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * s.timeScale)
}

func frame(f Frame) wireDelta {
	switch {
	case f.Tool != nil:
		td := wireToolDelta{Index: f.Tool.Index, ID: f.Tool.ID}
		if f.Tool.ID != "" {
			td.Type = "function"
		}
		td.Function.Name, td.Function.Arguments = f.Tool.Name, f.Tool.Arguments
		return wireDelta{ToolCalls: []wireToolDelta{td}}
	case f.Reasoning != "":
		return wireDelta{ReasoningContent: strptr(f.Reasoning)}
	default:
		return wireDelta{Content: strptr(f.Text)}
	}
}

func thinkingRequested(body map[string]any) bool {
	th, _ := body["thinking"].(map[string]any)
	return th != nil && th["type"] == "enabled"
}

func hasReasoning(frames []Frame) bool {
	for _, f := range frames {
		if f.Reasoning != "" {
			return true
		}
	}
	return false
}

func writeHTTPError(w http.ResponseWriter, e *HTTPError) {
	if e.RetryAfter != "" {
		w.Header().Set("Retry-After", e.RetryAfter)
	}
	if e.RequestID != "" {
		w.Header().Set("X-Request-Id", e.RequestID)
	}
	status := e.Status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	if e.Body != "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(e.Body))
		return
	}
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(status)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody(msg, e.Type, e.Code))
}
