package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"harness/internal/mcp"
	"harness/internal/testkit/poll"
	"harness/internal/tools"
)

// inProcess serves one SDK server over in-memory transports: every dial is
// a new connection (a restart), counted.
type inProcess struct {
	server *sdk.Server
	mu     sync.Mutex
	dials  int
	last   *sdk.ServerSession
}

func (p *inProcess) dial(ctx context.Context, _ mcp.Server, _ string) (sdk.Transport, error) {
	ct, st := sdk.NewInMemoryTransports()
	ss, err := p.server.Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.dials++
	p.last = ss
	p.mu.Unlock()
	return ct, nil
}

func (p *inProcess) dialCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dials
}

var objectSchema = map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []any{"text"}}

// newServer is an SDK server with tools that answer in every content kind,
// fail, wait for their context, and drop their own connection.
func newServer(t *testing.T) *inProcess {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "echo", Description: "Echoes text.", InputSchema: objectSchema},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct{ Text string }
			if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
				return nil, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + a.Text}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "picture.get", Description: "An image and a resource.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.ImageContent{MIMEType: "image/png", Data: []byte{1, 2, 3, 4}},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "hello notes"}},
				&sdk.ResourceLink{URI: "file:///big.bin", Name: "big"},
			}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "fail", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "no such thing"}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "wait", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1, Total: 2, Message: "half"})
			<-ctx.Done()
			return nil, ctx.Err()
		})
	s.AddTool(&sdk.Tool{Name: "crash", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			go func() { _ = req.Session.Close() }()
			<-ctx.Done()
			return nil, ctx.Err()
		})
	return &inProcess{server: s}
}

func open(t *testing.T, p *inProcess, srv mcp.Server) (*mcp.Manager, *mcp.Set) {
	t.Helper()
	if srv.Name == "" {
		srv.Name = "srv"
	}
	if srv.CallTimeout == 0 {
		srv.CallTimeout, srv.StartTimeout = mcp.DefaultCallTimeout, mcp.DefaultStartTimeout
	}
	m := mcp.New(mcp.Config{Servers: []mcp.Server{srv}}, mcp.Options{Dial: p.dial})
	set := m.Open("s1", t.TempDir(), nil)
	t.Cleanup(set.Close)
	return m, set
}

func byName(defs []tools.Definition) map[string]tools.Definition {
	out := map[string]tools.Definition{}
	for _, d := range defs {
		out[d.Name] = d
	}
	return out
}

func run(t *testing.T, d tools.Definition, args string) (tools.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	return d.Execute(ctx, &tools.Call{ID: "call-1", Name: d.Name, Args: json.RawMessage(args)})
}

// The server's tools are offered as SERVER__TOOL (characters providers
// refuse replaced), with schemas the registry compiles and the access the
// admin chose; every content kind becomes text the model can read.
func TestToolsAndResults(t *testing.T) {
	t.Parallel()
	p := newServer(t)
	m, set := open(t, p, mcp.Server{})
	defs, v1 := set.Tools(t.Context())
	got := byName(defs)
	st := m.Status()
	if len(st) != 1 || len(st[0].Sessions) != 1 || st[0].Sessions[0].State != mcp.StateReady || len(st[0].Tools) != len(defs) {
		t.Fatalf("status %+v", st)
	}
	for _, n := range []string{"srv__echo", "srv__picture_get", "srv__fail", "srv__wait", "srv__crash"} {
		d, ok := got[n]
		if !ok {
			t.Fatalf("%s missing from %v", n, defs)
		}
		if d.Access != tools.AccessExec || d.ConcurrencySafe(nil) {
			t.Errorf("%s: access %s, parallel %v; want exec, exclusive", n, d.Access, d.ConcurrencySafe(nil))
		}
	}
	scope := tools.NewRegistry().NewScope()
	for _, d := range defs {
		if err := scope.Register(d); err != nil {
			t.Fatalf("registry refuses %s: %v", d.Name, err)
		}
	}
	if _, v2 := set.Tools(t.Context()); v2 != v1 || p.dialCount() != 1 {
		t.Fatalf("a second assembly changed the version (%d → %d) or dialled again (%d)", v1, v2, p.dialCount())
	}

	cases := []struct {
		tool, args string
		want       []string
		isError    bool
	}{
		{"srv__echo", `{"text":"hi"}`, []string{"echo: hi"}, false},
		{"srv__picture_get", `{}`, []string{"[image: image/png, 4 bytes; not shown to the model]", "[resource file:///notes.txt, text/plain]\nhello notes", "[resource link: file:///big.bin (big)]"}, false},
		{"srv__fail", `{}`, []string{"Error: no such thing"}, true},
	}
	for _, tc := range cases {
		r, err := run(t, got[tc.tool], tc.args)
		if err != nil {
			t.Fatalf("%s: %v", tc.tool, err)
		}
		text := mcp.TextOf(r.Content)
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: result %q lacks %q", tc.tool, text, w)
			}
		}
		if r.IsError != tc.isError {
			t.Errorf("%s: isError %v", tc.tool, r.IsError)
		}
	}
}

// A read-only server's tools read (no approval) and may run in parallel.
func TestReadOnlyServer(t *testing.T) {
	t.Parallel()
	_, set := open(t, newServer(t), mcp.Server{ReadOnly: true})
	defs, _ := set.Tools(t.Context())
	for _, d := range defs {
		if d.Access != tools.AccessRead || !d.ConcurrencySafe(nil) {
			t.Fatalf("%s: access %s, parallel %v", d.Name, d.Access, d.ConcurrencySafe(nil))
		}
	}
}

// A server that drops the connection during a call fails that call with a
// coded tool error; the next call starts it again and works.
func TestCrashRestartsOnNextCall(t *testing.T) {
	t.Parallel()
	p := newServer(t)
	_, set := open(t, p, mcp.Server{})
	defs, v1 := set.Tools(t.Context())
	got := byName(defs)
	_, err := run(t, got["srv__crash"], `{}`)
	var ce *tools.CodedError
	if !errors.As(err, &ce) || ce.Code != mcp.CodeServerExited {
		t.Fatalf("crash: err %v, want %s", err, mcp.CodeServerExited)
	}
	r, err := run(t, got["srv__echo"], `{"text":"again"}`)
	if err != nil || mcp.TextOf(r.Content) != "echo: again" {
		t.Fatalf("after the crash: %+v, %v", r, err)
	}
	if n := p.dialCount(); n != 2 {
		t.Fatalf("dials = %d, want 2 (a restart)", n)
	}
	if _, v2 := set.Tools(t.Context()); v2 != v1 {
		t.Fatal("the restart changed the tool list's version")
	}
}

// A call that outlives its deadline ends with the context's error (the
// pipeline reports the timeout) and the server sees the cancellation;
// the connection stays usable.
func TestCallDeadline(t *testing.T) {
	t.Parallel()
	p := newServer(t)
	_, set := open(t, p, mcp.Server{})
	defs, _ := set.Tools(t.Context())
	got := byName(defs)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := got["srv__wait"].Execute(ctx, &tools.Call{ID: "w", Args: json.RawMessage(`{}`)})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the deadline", err)
	}
	if r, err := run(t, got["srv__echo"], `{"text":"still"}`); err != nil || mcp.TextOf(r.Content) != "echo: still" || p.dialCount() != 1 {
		t.Fatalf("after the deadline: %+v, %v, dials %d", r, err, p.dialCount())
	}
}

// list_changed makes the next assembly list again: a new tool appears and
// the version changes; a list that did not change keeps it.
func TestListChanged(t *testing.T) {
	t.Parallel()
	p := newServer(t)
	_, set := open(t, p, mcp.Server{})
	_, v1 := set.Tools(t.Context())
	p.server.AddTool(&sdk.Tool{Name: "later", Description: "Added later.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "late"}}}, nil
		})
	var defs []tools.Definition
	var v2 uint64
	poll.Eventually(t, "the list changes after a tool was added", func() bool {
		defs, v2 = set.Tools(t.Context())
		return v2 != v1
	}, poll.Within(5*time.Second))
	if _, ok := byName(defs)["srv__later"]; !ok {
		t.Fatalf("srv__later missing: %v", defs)
	}
	if _, v3 := set.Tools(t.Context()); v3 != v2 {
		t.Fatal("an unchanged list changed the version")
	}
}

// A server that cannot start offers no tools (and the step goes on).
func TestUnavailable(t *testing.T) {
	t.Parallel()
	m := mcp.New(mcp.Config{Servers: []mcp.Server{{Name: "bad", Command: "/nonexistent/mcp-server", StartTimeout: time.Second, CallTimeout: time.Second}}}, mcp.Options{})
	set := m.Open("s1", t.TempDir(), nil)
	defer set.Close()
	if defs, _ := set.Tools(t.Context()); len(defs) != 0 {
		t.Fatalf("defs %v", defs)
	}
}

// A streamable HTTP server is reached with the configured headers on every
// request; one without them is refused and offers nothing.
func TestStreamableHTTPHeaders(t *testing.T) {
	t.Parallel()
	p := newServer(t)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return p.server }, nil)
	var seen, refused atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			refused.Add(1)
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		seen.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(site.Close)
	cfg := mcp.Config{Servers: []mcp.Server{
		{Name: "web", URL: site.URL, Headers: map[string]string{"Authorization": "Bearer s3cret"}, CallTimeout: 10 * time.Second, StartTimeout: 10 * time.Second},
		{Name: "nokey", URL: site.URL, CallTimeout: 10 * time.Second, StartTimeout: 10 * time.Second},
	}}
	set := mcp.New(cfg, mcp.Options{}).Open("s1", t.TempDir(), nil)
	t.Cleanup(set.Close)
	defs, _ := set.Tools(t.Context())
	got := byName(defs)
	if _, ok := got["nokey__echo"]; ok {
		t.Fatal("a server that refused the connection offers tools")
	}
	r, err := run(t, got["web__echo"], `{"text":"over http"}`)
	if err != nil || mcp.TextOf(r.Content) != "echo: over http" {
		t.Fatalf("%+v, %v", r, err)
	}
	if seen.Load() == 0 || refused.Load() == 0 {
		t.Fatalf("requests with the header %d, refused %d", seen.Load(), refused.Load())
	}
}

// A server that cannot be reached is logged without its secrets: neither
// the URL's query nor a header value appears.
func TestErrorsAreRedacted(t *testing.T) {
	t.Parallel()
	// A closed port: Go's HTTP client quotes the whole URL in its error.
	site := httptest.NewServer(http.NotFoundHandler())
	site.Close()
	var buf safeBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	cfg := mcp.Config{Servers: []mcp.Server{{Name: "web", URL: site.URL + "/mcp?key=topsecret-query",
		Headers: map[string]string{"X-Api-Key": "topsecret-header"}, CallTimeout: 5 * time.Second, StartTimeout: 5 * time.Second}}}
	set := mcp.New(cfg, mcp.Options{Log: log}).Open("s1", t.TempDir(), nil)
	t.Cleanup(set.Close)
	if defs, _ := set.Tools(t.Context()); len(defs) != 0 {
		t.Fatalf("defs %v", defs)
	}
	out := buf.String()
	if !strings.Contains(out, "MCP server did not start") {
		t.Fatalf("no start failure logged:\n%s", out)
	}
	if strings.Contains(out, "topsecret") {
		t.Fatalf("a secret was logged:\n%s", out)
	}
}

type safeBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
