package openai

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"harness/internal/llm"
)

func TestRetryAfterMs(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   int64
	}{
		{"seconds", map[string]string{"Retry-After": "2"}, 2000},
		{"fractional seconds", map[string]string{"Retry-After": "1.5"}, 1500},
		{"http date", map[string]string{"Retry-After": now.Add(3 * time.Second).Format(http.TimeFormat)}, 3000},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"zero", map[string]string{"Retry-After": "0"}, 0},
		{"negative", map[string]string{"Retry-After": "-4"}, 0},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"retry-after-ms wins", map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250},
		{"absent", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got := retryAfterMs(h, now); got != tt.want {
				t.Fatalf("retryAfterMs = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestClassifyHTTP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status  int
		message string
		want    llm.Code
	}{
		{401, "", llm.CodeAuth},
		{403, "insufficient balance", llm.CodeAuth},
		{413, "context length exceeded", llm.CodeInvalidRequest},
		{429, "insufficient_quota", llm.CodeQuota},
		{500, "Quota exceeded for this month", llm.CodeQuota},
		{429, "", llm.CodeRateLimit},
		{400, "Input exceeds the model's context window", llm.CodeContextWindowExceeded},
		{400, "prompt is too long for the model", llm.CodeContextWindowExceeded},
		{400, "context window overflow", llm.CodeContextWindowExceeded},
		{400, "bad field", llm.CodeInvalidRequest},
		{502, "", llm.CodeServer},
		{422, "", "HTTP_422"},
	}
	for _, tt := range tests {
		f := classifyHTTP(tt.status, "", tt.message, "", nil)
		if f.Code != tt.want || f.Status != tt.status {
			t.Errorf("classifyHTTP(%d, %q) = %s, want %s", tt.status, tt.message, f.Code, tt.want)
		}
		if f.Message == "" {
			t.Errorf("classifyHTTP(%d) has no message", tt.status)
		}
	}
}

func TestPatchSplicesMessagesAndFields(t *testing.T) {
	t.Parallel()
	in := []byte(`{"model":"m","messages":null,"stream":true}`)
	p := wirePatch{thinking: "disabled", zeroTemperature: true, messages: [][]byte{
		[]byte(`{"role":"assistant","content":"","tool_calls":[{"id":"c"}]}`),
		[]byte(`{"role":"user","content":"x"},{"role":"tool","content":"y","tool_call_id":"c"}`),
	}}
	parts, err := p.apply(in)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(&partsReader{parts: parts})
	want := `{"model":"m","messages":[{"role":"assistant","content":"","tool_calls":[{"id":"c"}]},{"role":"user","content":"x"},{"role":"tool","content":"y","tool_call_id":"c"}],"stream":true,"thinking":{"type":"disabled"},"temperature":0}`
	if string(out) != want {
		t.Fatalf("patched = %s", out)
	}
	if !json.Valid(out) {
		t.Fatal("not JSON")
	}
	if _, err := (wirePatch{}).apply([]byte(`{"model":"m"}`)); err == nil {
		t.Fatal("a body without the messages field was accepted")
	}
}
