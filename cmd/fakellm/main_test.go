package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serve starts run with args and returns its base URL and a stop function
// that returns run's error.
func serve(t *testing.T, args ...string) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), io.Discard, func(u string) { urls <- u })
	}()
	select {
	case u := <-urls:
		return u, func() error { cancel(); return <-done }
	case err := <-done:
		cancel()
		t.Fatalf("run ended early: %v", err)
		return "", nil
	}
}

// chat posts a streaming request and returns the data payloads.
func chat(t *testing.T, url, content string) []string {
	t.Helper()
	body := `{"model":"demo","stream":true,"messages":[{"role":"user","content":` + content + `}]}`
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var data []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, rest)
		}
	}
	return data
}

func TestServesDemo(t *testing.T) {
	t.Parallel()
	url, stop := serve(t, "-chunk-delay", "0")
	data := chat(t, url, `"long: 20"`)
	// role chunk + 20 deltas + finish + usage + [DONE]
	if len(data) != 24 || data[len(data)-1] != "[DONE]" {
		t.Fatalf("%d payloads: %q", len(data), data)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestServesScript(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(script, []byte(`[{"text": "scripted answer", "chunks": 1}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	url, stop := serve(t, "-script", script)
	data := chat(t, url, `"anything"`)
	if !strings.Contains(strings.Join(data, ""), `"content":"scripted answer"`) {
		t.Fatalf("payloads %q", data)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestBadFlags(t *testing.T) {
	t.Parallel()
	if err := run(t.Context(), []string{"-script", filepath.Join(t.TempDir(), "missing.json")}, io.Discard, nil); err == nil {
		t.Fatal("missing script accepted")
	}
	if err := run(t.Context(), []string{"-nope"}, io.Discard, nil); err == nil {
		t.Fatal("unknown flag accepted")
	}
}
