package fake

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// post sends a chat request and returns the status and the data payloads.
func post(t *testing.T, url, body string, hdr map[string]string) (int, []string) {
	t.Helper()
	status, data, err := doPost(url, body, hdr)
	if err != nil {
		t.Fatal(err)
	}
	return status, data
}

// doPost is post for goroutines other than the test's.
func doPost(url, body string, hdr map[string]string) (int, []string, error) {
	req, err := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var data []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, rest)
		}
	}
	return resp.StatusCode, data, sc.Err()
}

type chunkView struct {
	Choices []struct {
		Delta struct {
			Role             string  `json:"role"`
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
			ToolCalls        []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage map[string]any `json:"usage"`
}

func decode(t *testing.T, payloads []string) []chunkView {
	t.Helper()
	var out []chunkView
	for _, p := range payloads {
		if p == "[DONE]" {
			continue
		}
		var c chunkView
		if err := json.Unmarshal([]byte(p), &c); err != nil {
			t.Fatalf("payload %q: %v", p, err)
		}
		out = append(out, c)
	}
	return out
}

func TestServerStreamsWireFormat(t *testing.T) {
	t.Parallel()
	srv := NewServer(Script{Replies: []Reply{{
		Reasoning: "ab", Text: "hello world", Chunks: 2,
		ToolCalls: []ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command":"ls"}`, Fragments: 3}},
		Usage:     &Usage{PromptTokens: 100, CompletionTokens: 9, CacheHitTokens: 64, ReasoningTokens: 2},
	}}}, WithTimeScale(0))
	url := srv.Start(t)
	status, data := post(t, url, `{"model":"m1","messages":[{"role":"user","content":"hi"}]}`, nil)
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	if data[len(data)-1] != "[DONE]" {
		t.Fatalf("last payload %q", data[len(data)-1])
	}
	chunks := decode(t, data)
	first := chunks[0].Choices[0].Delta
	if first.Role != "assistant" || first.ReasoningContent == nil || *first.ReasoningContent != "" {
		t.Fatalf("role chunk = %+v", first)
	}
	var reasoning, text []string
	var args []string
	for _, c := range chunks[1:] {
		if len(c.Choices) == 0 {
			continue
		}
		d := c.Choices[0].Delta
		switch {
		case d.ReasoningContent != nil:
			reasoning = append(reasoning, *d.ReasoningContent)
		case len(d.ToolCalls) > 0:
			if tc := d.ToolCalls[0]; tc.ID == "" {
				args = append(args, tc.Function.Arguments)
			} else if tc.ID != "c1" || tc.Function.Name != "bash" || tc.Function.Arguments != "" {
				t.Fatalf("first tool fragment = %+v", tc)
			}
		case d.Content != nil && *d.Content != "":
			text = append(text, *d.Content)
		}
	}
	if !reflect.DeepEqual(reasoning, []string{"a", "b"}) || len(text) != 2 || strings.Join(text, "") != "hello world" {
		t.Fatalf("reasoning %q text %q", reasoning, text)
	}
	if len(args) != 3 || strings.Join(args, "") != `{"command":"ls"}` {
		t.Fatalf("argument fragments %q", args)
	}
	fin := chunks[len(chunks)-2]
	if fin.Choices[0].FinishReason == nil || *fin.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("finish chunk = %+v", fin)
	}
	usage := chunks[len(chunks)-1]
	if len(usage.Choices) != 0 || usage.Usage["prompt_cache_hit_tokens"] != float64(64) || usage.Usage["prompt_cache_miss_tokens"] != float64(36) {
		t.Fatalf("usage chunk = %+v", usage)
	}
}

func TestServerRecordsRequests(t *testing.T) {
	t.Parallel()
	srv := NewServer(Script{
		Replies: []Reply{{Text: "scripted"}},
		Responder: func(r Recorded) Reply {
			return Reply{Text: "dynamic " + r.Messages()[0].Text()}
		},
	}, WithTimeScale(0))
	url := srv.Start(t)
	post(t, url, `{"model":"m","messages":[{"role":"user","content":"one"}]}`, map[string]string{"X-Test": "1"})
	recs := srv.WaitRequests(1)
	if len(recs) != 1 || recs[0].Header.Get("X-Test") != "1" || recs[0].Model() != "m" || recs[0].Index != 0 {
		t.Fatalf("records = %+v", recs)
	}
	_, data := post(t, url, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"two"}]}]}`, nil)
	var text strings.Builder
	for _, c := range decode(t, data) {
		if len(c.Choices) > 0 && c.Choices[0].Delta.Content != nil {
			text.WriteString(*c.Choices[0].Delta.Content)
		}
	}
	if text.String() != "dynamic two" {
		t.Fatalf("responder reply = %q", text.String())
	}
	recs = srv.Requests()
	if len(recs) != 2 || recs[1].Messages()[0].Text() != "two" || recs[1].Path != "/v1/chat/completions" {
		t.Fatalf("records = %+v", recs)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if got, err := srv.WaitRequestsContext(ctx, 3); err == nil || len(got) != 2 {
		t.Fatalf("WaitRequestsContext = %d, %v", len(got), err)
	}
}

func TestServerExhaustedAndRoutes(t *testing.T) {
	t.Parallel()
	srv := NewServer(Script{}, WithModels("a", "b"))
	url := srv.Start(t)
	if status, _ := post(t, url, `{}`, nil); status != http.StatusBadRequest {
		t.Fatalf("exhausted status %d", status)
	}
	if got := srv.Requests(); len(got) != 1 || got[0].Body == nil {
		t.Fatalf("exhausted request not recorded: %+v", got)
	}
	for _, path := range []string{"/v1/models", "/models"} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if err != nil || len(list.Data) != 2 || list.Data[1].ID != "b" {
			t.Fatalf("%s = %+v, %v", path, list, err)
		}
	}
	resp, err := http.Get(url + "/v1/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET chat = %d", resp.StatusCode)
	}
	resp, err = http.Get(url + "/nope")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown route = %d", resp.StatusCode)
	}
}

func TestServerHTTPError(t *testing.T) {
	t.Parallel()
	srv := NewServer(Script{Replies: []Reply{{Error: &HTTPError{Status: 429, Message: "slow down", RetryAfter: "3", RequestID: "r1"}}}})
	url := srv.Start(t)
	resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" || resp.Header.Get("X-Request-Id") != "r1" || body.Error.Message != "slow down" {
		t.Fatalf("status %d headers %v body %+v", resp.StatusCode, resp.Header, body)
	}
}

func TestServerFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		fault    Fault
		done     bool
		badChunk bool
	}{
		{"cut", Fault{Kind: FaultCut, After: 1}, false, false},
		{"malformed", Fault{Kind: FaultMalformed, After: 1}, true, true},
		{"short stall", Fault{Kind: FaultStall, After: 1, For: 20 * time.Millisecond, Ping: 5 * time.Millisecond}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := NewServer(Script{Replies: []Reply{{Text: "a b c", Fault: &tt.fault}}}, WithTimeScale(0))
			_, data := post(t, srv.Start(t), `{}`, nil)
			if got := data[len(data)-1] == "[DONE]"; got != tt.done {
				t.Fatalf("[DONE] = %v, want %v (%q)", got, tt.done, data)
			}
			bad := false
			for _, d := range data {
				if d != "[DONE]" && !json.Valid([]byte(d)) {
					bad = true
				}
			}
			if bad != tt.badChunk {
				t.Fatalf("malformed chunk = %v, want %v", bad, tt.badChunk)
			}
		})
	}
}

func TestLoadScript(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	obj := filepath.Join(dir, "obj.json")
	if err := os.WriteFile(obj, []byte(`{"replies": [
		{"name": "r1", "reasoning": "hm", "toolCalls": [{"name": "read", "arguments": {"file_path": "go.mod"}, "fragments": 2}], "delay": "5ms"},
		{"text": "x", "chunks": 3, "delay": 12, "usage": {"promptTokens": 10, "completionTokens": 2, "cacheHitTokens": 8, "openaiStyle": true}},
		{"error": {"status": 429, "message": "slow", "retryAfter": "2"}},
		{"frames": [{"text": "a", "delay": "1s"}, {"tool": {"index": 0, "id": "c", "name": "bash", "arguments": "{}"}}]},
		{"fault": {"kind": "stall", "after": 2, "for": "150ms", "ping": "10ms"}, "finish": "length"}
	]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := LoadScript(obj)
	if err != nil {
		t.Fatal(err)
	}
	want := []Reply{
		{Name: "r1", Reasoning: "hm", ToolCalls: []ToolCall{{Name: "read", Arguments: `{"file_path":"go.mod"}`, Fragments: 2}}, Delay: 5 * time.Millisecond},
		{Text: "x", Chunks: 3, Delay: 12 * time.Millisecond, Usage: &Usage{PromptTokens: 10, CompletionTokens: 2, CacheHitTokens: 8, OpenAIStyle: true}},
		{Error: &HTTPError{Status: 429, Message: "slow", RetryAfter: "2"}},
		{Frames: []Frame{{Text: "a", Delay: time.Second}, {Tool: &ToolFragment{ID: "c", Name: "bash", Arguments: "{}"}}}},
		{Fault: &Fault{Kind: FaultStall, After: 2, For: 150 * time.Millisecond, Ping: 10 * time.Millisecond}, Finish: "length"},
	}
	if !reflect.DeepEqual(s.Replies, want) {
		t.Fatalf("replies = %+v", s.Replies)
	}

	// A script round-trips through JSON, and a bare array loads too.
	raw, err := json.Marshal(s.Replies)
	if err != nil {
		t.Fatal(err)
	}
	arr := filepath.Join(dir, "arr.json")
	if err := os.WriteFile(arr, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	s2, err := LoadScript(arr)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s2.Replies, want) {
		t.Fatalf("round trip = %+v", s2.Replies)
	}

	for name, content := range map[string]string{
		"bad.json":      `{"replies": [`,
		"badDelay.json": `[{"delay": "soon"}]`,
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadScript(p); err == nil {
			t.Errorf("%s loaded", name)
		}
	}
	if _, err := LoadScript(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("missing file loaded")
	}
}

func TestSplit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s    string
		n    int
		want []string
	}{
		{"hello big world", 0, []string{"hello", " big", " world"}},
		{"line\n\nnext", 0, []string{"line", "\n\nnext"}},
		{"abcdefg", 3, []string{"abc", "de", "fg"}},
		{"héllo", 5, []string{"h", "é", "l", "l", "o"}},
		{"ab", 5, []string{"a", "b"}},
		{"", 0, nil},
	}
	for _, tt := range tests {
		if got := split(tt.s, tt.n); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("split(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
	if got := splitN("", 3); !reflect.DeepEqual(got, []string{""}) {
		t.Errorf("splitN empty = %q", got)
	}
}

func TestListenAndClose(t *testing.T) {
	t.Parallel()
	srv := NewServer(Script{Replies: []Reply{{Text: "x", Fault: &Fault{Kind: FaultStall, After: 0}}}})
	url, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Listen("127.0.0.1:0"); err == nil {
		t.Fatal("second Listen accepted")
	}
	// A stall "until the client goes away" ends when the server closes.
	got := make(chan int, 1)
	go func() {
		_, data, _ := doPost(url, `{}`, nil)
		got <- len(data)
	}()
	srv.WaitRequests(1)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if n := <-got; n != 1 {
		t.Fatalf("payloads before close = %d, want the role chunk only", n)
	}
}
