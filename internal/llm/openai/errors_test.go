package openai_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/llm/openai"
)

// The full classification table, through real HTTP (cases 56, 57).
func TestErrorClassification(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		reply      fake.Reply
		code       llm.Code
		status     int
		retryAfter int64
		message    string // substring
		requestID  string
	}{
		{"401 is AUTH", fake.Reply{Error: &fake.HTTPError{Status: 401, Message: "Authentication Fails"}}, llm.CodeAuth, 401, 0, "Authentication Fails", ""},
		{"403 is AUTH", fake.Reply{Error: &fake.HTTPError{Status: 403, Message: "forbidden"}}, llm.CodeAuth, 403, 0, "forbidden", ""},
		{"413 is INVALID_REQUEST", fake.Reply{Error: &fake.HTTPError{Status: 413, Message: "too big"}}, llm.CodeInvalidRequest, 413, 0, "too big", ""},
		{"429 insufficient balance is QUOTA", fake.Reply{Error: &fake.HTTPError{Status: 429, Message: "Insufficient Balance"}}, llm.CodeQuota, 429, 0, "Insufficient Balance", ""},
		{"402 is QUOTA", fake.Reply{Error: &fake.HTTPError{Status: 402, Message: "Payment Required"}}, llm.CodeQuota, 402, 0, "", ""},
		{"quota wording on 400", fake.Reply{Error: &fake.HTTPError{Status: 400, Message: "You exceeded your current quota", Code: "insufficient_quota"}}, llm.CodeQuota, 400, 0, "quota", ""},
		{"429 is RATE_LIMIT with Retry-After", fake.Reply{Error: &fake.HTTPError{Status: 429, Message: "Rate limit reached", RetryAfter: "2", RequestID: "req-7"}}, llm.CodeRateLimit, 429, 2000, "Rate limit", "req-7"},
		{"400 context overflow", fake.Reply{Error: &fake.HTTPError{Status: 400, Message: "This model's maximum context length is 1000000 tokens. However, you requested 1200000 tokens, which exceeded the limit."}}, llm.CodeContextWindowExceeded, 400, 0, "maximum context length", ""},
		{"400 context_length_exceeded code", fake.Reply{Error: &fake.HTTPError{Status: 400, Message: "too many tokens", Code: "context_length_exceeded"}}, llm.CodeContextWindowExceeded, 400, 0, "", ""},
		{"other 400 is INVALID_REQUEST", fake.Reply{Error: &fake.HTTPError{Status: 400, Message: "invalid tools"}}, llm.CodeInvalidRequest, 400, 0, "invalid tools", ""},
		{"503 is SERVER", fake.Reply{Error: &fake.HTTPError{Status: 503, Message: "Server overloaded"}}, llm.CodeServer, 503, 0, "overloaded", ""},
		{"500 with a plain body uses the status line", fake.Reply{Error: &fake.HTTPError{Status: 500, Body: "upstream exploded"}}, llm.CodeServer, 500, 0, "HTTP 500 Internal Server Error", ""},
		{"404 is HTTP_404", fake.Reply{Error: &fake.HTTPError{Status: 404, Message: "model not found"}}, "HTTP_404", 404, 0, "model not found", ""},
		{"cut is STREAM_CLOSED", fake.Reply{Text: "a b c", Fault: &fake.Fault{Kind: fake.FaultCut, After: 2}}, llm.CodeStreamClosed, 0, 0, "[DONE]", "fake-0"},
		{"cut after finish is STREAM_CLOSED", fake.Reply{Text: "a", Fault: &fake.Fault{Kind: fake.FaultCut, After: 99}}, llm.CodeStreamClosed, 0, 0, "", ""},
		{"bad JSON is MALFORMED_RESPONSE", fake.Reply{Text: "a b", Fault: &fake.Fault{Kind: fake.FaultMalformed, After: 1}}, llm.CodeMalformedResponse, 0, 0, "invalid chunk", ""},
		{"in-stream error is SERVER", fake.Reply{Text: "a b", Fault: &fake.Fault{Kind: fake.FaultError, After: 1, Message: "backend hiccup"}}, llm.CodeServer, 0, 0, "backend hiccup", ""},
		{"in-stream overflow", fake.Reply{Fault: &fake.Fault{Kind: fake.FaultError, Message: "context window exceeded"}}, llm.CodeContextWindowExceeded, 0, 0, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, p := serve(t, []fake.Reply{tt.reply})
			f := stream(t, p, prompt("x")).failure(t)
			if f == nil {
				t.Fatal("no failure")
			}
			if f.Code != tt.code || f.Status != tt.status || f.RetryAfterMs != tt.retryAfter {
				t.Fatalf("failure = %+v, want code %s status %d retryAfter %d", f, tt.code, tt.status, tt.retryAfter)
			}
			if !strings.Contains(f.Message, tt.message) {
				t.Fatalf("message %q does not contain %q", f.Message, tt.message)
			}
			if tt.requestID != "" && f.RequestID != tt.requestID {
				t.Fatalf("request id = %q, want %q", f.RequestID, tt.requestID)
			}
		})
	}
}

func TestTransportFailureNamesEndpoint(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	p := deepseek(t, url)
	f := stream(t, p, prompt("x")).failure(t)
	if f == nil || f.Code != llm.CodeTransport {
		t.Fatalf("failure = %+v", f)
	}
	if !strings.Contains(f.Message, url+"/chat/completions") || !strings.Contains(f.Message, "refused") {
		t.Fatalf("message %q lacks endpoint or cause", f.Message)
	}
}

func TestEmptyBodyIsEmptyResponse(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(hs.Close)
	f := stream(t, deepseek(t, hs.URL), prompt("x")).failure(t)
	if f == nil || f.Code != llm.CodeEmptyResponse {
		t.Fatalf("failure = %+v", f)
	}
}

// Failure messages never contain the key, even when a server echoes it.
func TestKeyNeverInFailures(t *testing.T) {
	t.Parallel()
	echo := "Incorrect API key provided: " + testKey + ". Header was: Bearer " + testKey
	tests := []fake.Reply{
		{Error: &fake.HTTPError{Status: 401, Message: echo}},
		{Error: &fake.HTTPError{Status: 400, Message: echo}},
		{Error: &fake.HTTPError{Status: 500, Body: echo}},
		{Error: &fake.HTTPError{Status: 429, Body: `{"detail": "` + testKey + `"}`}},
		{Text: "a b", Fault: &fake.Fault{Kind: fake.FaultError, After: 1, Message: echo}},
	}
	for i, reply := range tests {
		_, p := serve(t, []fake.Reply{reply})
		f := stream(t, p, prompt("x")).failure(t)
		if f == nil {
			t.Fatalf("case %d: no failure", i)
		}
		for _, s := range []string{f.Message, f.Error()} {
			if strings.Contains(s, testKey) || strings.Contains(s, "0123456789abcdef") {
				t.Fatalf("case %d: key leaked in %q", i, s)
			}
		}
	}
	// A key hidden in a base URL (user error) is not echoed by TRANSPORT.
	p := deepseek(t, "http://127.0.0.1:1/"+testKey)
	if f := stream(t, p, prompt("x")).failure(t); f == nil || strings.Contains(f.Message, testKey) {
		t.Fatalf("transport failure leaked the key: %+v", f)
	}
}

func TestRequestRejectedBeforeIO(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		mod  func(*openai.Config)
		req  llm.Request
		code llm.Code
	}{
		{"effort outside the catalog", nil, llm.Request{CallConfig: llm.CallConfig{ReasoningEffort: "extreme"}}, llm.CodeUnsupportedEffort},
		{"thinking disabled route refuses high", func(c *openai.Config) { c.Thinking = false }, llm.Request{CallConfig: llm.CallConfig{ReasoningEffort: llm.EffortHigh}}, llm.CodeUnsupportedEffort},
		{"an image in a tool result", nil, llm.Request{Messages: []llm.Message{{ID: "u", Role: llm.RoleUser, Source: llm.Source{Kind: llm.SourceTool},
			Content: []llm.ContentBlock{{Type: llm.BlockToolResult, ToolCallID: "c1",
				Content: []llm.ContentBlock{{Type: llm.BlockImage, Attachment: "a1", MediaType: "image/png"}}}}}}}, llm.CodeUnsupportedContent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var mods []func(*openai.Config)
			if tt.mod != nil {
				mods = append(mods, tt.mod)
			}
			srv, p := serve(t, []fake.Reply{{Text: "unused"}}, mods...)
			f := stream(t, p, tt.req).failure(t)
			if f == nil || f.Code != tt.code {
				t.Fatalf("failure = %+v, want %s", f, tt.code)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Fatalf("%d requests sent", n)
			}
		})
	}
}

// The idle watchdog covers the wait for headers and every read; keep-alive
// comments count as activity.
func TestIdleWatchdog(t *testing.T) {
	t.Parallel()
	short := func(c *openai.Config) { c.IdleTimeout = 150 * time.Millisecond }
	// Stalls are finite so that a broken watchdog fails the test instead
	// of hanging it.
	const long = 5 * time.Second
	tests := []struct {
		name    string
		fault   fake.Fault
		timeout bool
	}{
		{"stall before headers", fake.Fault{Kind: fake.FaultStall, BeforeHeaders: true, For: long}, true},
		{"stall mid-stream", fake.Fault{Kind: fake.FaultStall, After: 1, For: long}, true},
		{"pings keep a stalled stream alive", fake.Fault{Kind: fake.FaultStall, After: 1, For: 600 * time.Millisecond, Ping: 10 * time.Millisecond}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, p := serve(t, []fake.Reply{{Text: "one two three", Fault: &tt.fault}}, short)
			r := stream(t, p, prompt("x"))
			f := r.failure(t)
			if !tt.timeout {
				if f != nil {
					t.Fatalf("failure = %+v", f)
				}
				if got := r.assembled().Message("m", llm.Source{}).Text(); got != "one two three" {
					t.Fatalf("text = %q", got)
				}
				return
			}
			if f == nil || f.Code != llm.CodeTimeout {
				t.Fatalf("failure = %+v, want TIMEOUT", f)
			}
			if !llm.DefaultRetryPolicy().Retryable(f.Code) {
				t.Fatal("TIMEOUT not retryable")
			}
		})
	}
}

// SSE fields other than data (event, id, comments) do not disturb the
// stream or an in-stream error that follows them.
func TestSSEFieldsIgnored(t *testing.T) {
	t.Parallel()
	chunk := `{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`
	tests := []struct {
		name string
		body string
		code llm.Code
	}{
		{"fields around data", "event: message\nid: 1\nretry: 100\n: ping\ndata: " + chunk + "\n\n" +
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n", ""},
		{"error after fields", "event: message\ndata: " + chunk + "\n\nevent: error\nid: 2\n: ping\n" +
			`data: {"error":{"message":"boom","type":"server_error"}}` + "\n\n", llm.CodeServer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte(tt.body))
			}))
			t.Cleanup(hs.Close)
			r := stream(t, deepseek(t, hs.URL), prompt("x"))
			f := r.failure(t)
			if tt.code == "" {
				if f != nil || r.assembled().Message("m", llm.Source{}).Text() != "hi" {
					t.Fatalf("failure %+v chunks %+v", f, r.chunks)
				}
				return
			}
			if f == nil || f.Code != tt.code || !strings.Contains(f.Message, "boom") {
				t.Fatalf("failure = %+v", f)
			}
		})
	}
}
