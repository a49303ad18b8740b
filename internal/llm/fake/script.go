package fake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Script is what a Server answers. Replies are consumed one per chat
// request, in order; once they run out, Responder (when set) answers every
// further request. A request with neither gets an HTTP 400 "script
// exhausted" error.
type Script struct {
	Replies   []Reply   `json:"replies"`
	Responder Responder `json:"-"`
}

// Responder builds a reply from the recorded request, for dynamic behaviour.
type Responder func(req Recorded) Reply

// Reply is one scripted model response. The simple fields (Reasoning, Text,
// ToolCalls) are split into deltas; Frames gives the deltas explicitly
// instead (replay). Error answers with an HTTP error instead of a stream;
// Fault disturbs the stream.
type Reply struct {
	// Name labels the reply in logs and tests (e.g. a corpus message id).
	Name      string     `json:"name,omitempty"`
	Reasoning string     `json:"reasoning,omitempty"`
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// Chunks is how many deltas Reasoning and Text are each split into;
	// 0 splits them into words, as a tokenizer would.
	Chunks int `json:"chunks,omitempty"`
	// Frames, when set, replaces Reasoning, Text and ToolCalls.
	Frames []Frame `json:"frames,omitempty"`
	// Delay is the pause before every delta but the first (JSON: "5ms").
	Delay time.Duration `json:"-"`
	// Usage is sent in a trailing usage-only chunk; nil computes plausible
	// numbers from the sizes of the request and the reply.
	Usage *Usage `json:"usage,omitempty"`
	// FinishUsage is attached to the finish chunk (DeepSeek style).
	FinishUsage *Usage `json:"finishUsage,omitempty"`
	NoUsage     bool   `json:"noUsage,omitempty"`
	// Finish is the wire finish_reason; "" means tool_calls when the reply
	// has tool calls, else stop; "none" sends no finish_reason at all.
	Finish string     `json:"finish,omitempty"`
	Error  *HTTPError `json:"error,omitempty"`
	Fault  *Fault     `json:"fault,omitempty"`
}

// ToolCall is one scripted tool call.
type ToolCall struct {
	// ID defaults to call_<request>_<n>.
	ID   string `json:"id,omitempty"`
	Name string `json:"name"`
	// Arguments is the raw JSON text; a JSON script may give an object.
	Arguments string `json:"arguments"`
	// Fragments is how many pieces the arguments are split into (min 1).
	Fragments int `json:"fragments,omitempty"`
}

// Frame is one explicit delta. Exactly one of Reasoning, Text, Tool is set.
type Frame struct {
	Delay     time.Duration `json:"-"` // pause before this frame (JSON: "delay")
	Reasoning string        `json:"reasoning,omitempty"`
	Text      string        `json:"text,omitempty"`
	Tool      *ToolFragment `json:"tool,omitempty"`
}

// ToolFragment is one tool-call delta on the wire: Index is the wire index;
// ID and Name usually travel on the first fragment only.
type ToolFragment struct {
	Index     int    `json:"index"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// Usage is the wire usage a reply reports.
type Usage struct {
	PromptTokens     int64 `json:"promptTokens"`
	CompletionTokens int64 `json:"completionTokens"`
	CacheHitTokens   int64 `json:"cacheHitTokens,omitempty"`
	ReasoningTokens  int64 `json:"reasoningTokens,omitempty"`
	// OpenAIStyle reports cache hits as prompt_tokens_details.cached_tokens
	// instead of DeepSeek's prompt_cache_hit_tokens.
	OpenAIStyle bool `json:"openaiStyle,omitempty"`
}

// HTTPError answers a request with an error status.
type HTTPError struct {
	Status int `json:"status"`
	// Message, Type and Code form the OpenAI error body
	// {"error":{"message","type","code"}}; Body replaces it verbatim.
	Message string `json:"message,omitempty"`
	Type    string `json:"type,omitempty"`
	Code    string `json:"code,omitempty"`
	Body    string `json:"body,omitempty"`
	// RetryAfter is the Retry-After header value, verbatim.
	RetryAfter string `json:"retryAfter,omitempty"`
	RequestID  string `json:"requestId,omitempty"`
}

// FaultKind names a stream disturbance.
type FaultKind string

const (
	// FaultStall stops sending for For (0: until the client goes away).
	FaultStall FaultKind = "stall"
	// FaultCut ends the response without [DONE].
	FaultCut FaultKind = "cut"
	// FaultMalformed sends a payload that is not JSON, then goes on.
	FaultMalformed FaultKind = "malformed"
	// FaultError sends an in-stream error object and ends the response.
	FaultError FaultKind = "error"
)

// Fault disturbs a stream after After data chunks (deltas, then the finish
// chunk, then the usage chunk; the opening role chunk is not counted). An
// After beyond the stream fires just before [DONE].
type Fault struct {
	Kind  FaultKind `json:"kind"`
	After int       `json:"after"`
	// BeforeHeaders stalls before the response headers (stall only).
	BeforeHeaders bool `json:"beforeHeaders,omitempty"`
	// For is the stall length (JSON: "for": "2s"); 0 stalls until the
	// client goes away or the server closes.
	For time.Duration `json:"-"`
	// Ping sends an SSE comment this often during a stall (JSON: "ping").
	Ping time.Duration `json:"-"`
	// Message is the in-stream error message (error only).
	Message string `json:"message,omitempty"`
}

// LoadScript reads a JSON script file: either {"replies": [...]} or a bare
// array of replies. Durations are strings such as "5ms" or numbers of
// milliseconds.
func LoadScript(path string) (Script, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Script{}, fmt.Errorf("load script: %w", err)
	}
	raw = bytes.TrimSpace(raw)
	var s Script
	if len(raw) > 0 && raw[0] == '[' {
		err = json.Unmarshal(raw, &s.Replies)
	} else {
		err = json.Unmarshal(raw, &s)
	}
	if err != nil {
		return Script{}, fmt.Errorf("load script %s: %w", path, err)
	}
	return s, nil
}

// jsonDuration is a duration in JSON: "250ms" or a number of milliseconds.
type jsonDuration time.Duration

func (d *jsonDuration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w", s, err)
		}
		*d = jsonDuration(v)
		return nil
	}
	ms, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("duration %s: %w", b, err)
	}
	*d = jsonDuration(time.Duration(ms * float64(time.Millisecond)))
	return nil
}

func (d jsonDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads the delay as a duration string.
func (r *Reply) UnmarshalJSON(b []byte) error {
	type plain Reply
	aux := struct {
		*plain
		Delay jsonDuration `json:"delay"`
	}{plain: (*plain)(r)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	r.Delay = time.Duration(aux.Delay)
	return nil
}

// MarshalJSON writes the delay as a duration string.
func (r Reply) MarshalJSON() ([]byte, error) {
	type plain Reply
	return json.Marshal(struct {
		plain
		Delay jsonDuration `json:"delay,omitempty"`
	}{plain(r), jsonDuration(r.Delay)})
}

// UnmarshalJSON reads the delay as a duration string.
func (f *Frame) UnmarshalJSON(b []byte) error {
	type plain Frame
	aux := struct {
		*plain
		Delay jsonDuration `json:"delay"`
	}{plain: (*plain)(f)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	f.Delay = time.Duration(aux.Delay)
	return nil
}

// MarshalJSON writes the delay as a duration string.
func (f Frame) MarshalJSON() ([]byte, error) {
	type plain Frame
	return json.Marshal(struct {
		plain
		Delay jsonDuration `json:"delay,omitempty"`
	}{plain(f), jsonDuration(f.Delay)})
}

// UnmarshalJSON reads For and Ping as duration strings.
func (f *Fault) UnmarshalJSON(b []byte) error {
	type plain Fault
	aux := struct {
		*plain
		For  jsonDuration `json:"for"`
		Ping jsonDuration `json:"ping"`
	}{plain: (*plain)(f)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	f.For, f.Ping = time.Duration(aux.For), time.Duration(aux.Ping)
	return nil
}

// MarshalJSON writes For and Ping as duration strings.
func (f Fault) MarshalJSON() ([]byte, error) {
	type plain Fault
	return json.Marshal(struct {
		plain
		For  jsonDuration `json:"for,omitempty"`
		Ping jsonDuration `json:"ping,omitempty"`
	}{plain(f), jsonDuration(f.For), jsonDuration(f.Ping)})
}

// UnmarshalJSON accepts arguments as a JSON string or as any JSON value,
// which is kept as its compact text.
func (c *ToolCall) UnmarshalJSON(b []byte) error {
	type plain ToolCall
	aux := struct {
		*plain
		Arguments json.RawMessage `json:"arguments"`
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	args := bytes.TrimSpace(aux.Arguments)
	switch {
	case len(args) == 0 || string(args) == "null":
		c.Arguments = ""
	case args[0] == '"':
		return json.Unmarshal(args, &c.Arguments)
	default:
		var buf bytes.Buffer
		if err := json.Compact(&buf, args); err != nil {
			return err
		}
		c.Arguments = buf.String()
	}
	return nil
}
