package openai_test

import (
	"bytes"
	"testing"

	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/session"
)

// TestWireCacheSendsTheSameBody: a request whose history comes from the
// session log's wire cache is the same body, byte for byte, as one encoded
// from scratch, and a later request encodes only the new messages.
func TestWireCacheSendsTheSameBody(t *testing.T) {
	t.Parallel()
	srv, p := serve(t, []fake.Reply{{Text: "one"}, {Text: "two"}, {Text: "three"}})
	l := session.New(session.Header{ID: "s"}, session.Options{})
	add := func(m llm.Message) {
		t.Helper()
		if _, err := l.AppendSurface(session.TypeUserMessage, m, session.Append(), nil); err != nil {
			t.Fatal(err)
		}
	}
	add(llm.UserText("hello <b>&</b> \u2028", userSrc()))
	add(llm.ToolResultMessage("r1", "c1", []llm.ContentBlock{llm.Text("a.txt\n")}, false))

	history, wire := l.HistoryWire()
	cached := llm.Request{System: "sys", Messages: history, Wire: wire}
	plain := llm.Request{System: "sys", Messages: history}
	for _, req := range []llm.Request{cached, plain} {
		if r := stream(t, p, req); r.err != nil {
			t.Fatal(r.err)
		}
	}
	reqs := srv.WaitRequests(2)
	if !bytes.Equal(reqs[0].Raw, reqs[1].Raw) {
		t.Fatalf("cached body differs:\n%s\n%s", reqs[0].Raw, reqs[1].Raw)
	}

	add(llm.UserText("more", userSrc()))
	history, wire = l.HistoryWire()
	counting := &countingWire{inner: wire}
	if r := stream(t, p, llm.Request{System: "sys", Messages: history, Wire: counting}); r.err != nil {
		t.Fatal(r.err)
	}
	if counting.encodes != 1 {
		t.Fatalf("the third request encoded %d messages, want only the new one", counting.encodes)
	}
	if !bytes.Contains(srv.WaitRequests(3)[2].Raw, []byte(`{"role":"user","content":"more"}`)) {
		t.Fatal("the new message is not in the body")
	}
}

// countingWire counts the messages its inner cache had to encode.
type countingWire struct {
	inner   llm.WireCache
	encodes int
}

func (c *countingWire) Encoded(variant string, encode func(llm.Message) ([]byte, error)) ([][]byte, error) {
	return c.inner.Encoded(variant, func(m llm.Message) ([]byte, error) {
		c.encodes++
		return encode(m)
	})
}
