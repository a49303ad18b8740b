package builtin

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"harness/internal/session"
	"harness/internal/tools"
)

// site is a loopback HTTP server that counts the requests reaching it.
type site struct {
	*httptest.Server
	hits atomic.Int32
}

func newSite(t *testing.T, h http.HandlerFunc) *site {
	t.Helper()
	s := &site{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// hostPort is the site's "127.0.0.1:port", an allow-list entry.
func (s *site) hostPort() string { return strings.TrimPrefix(s.URL, "http://") }

func (s *site) port() string {
	_, p, _ := net.SplitHostPort(s.hostPort())
	return p
}

// fetchHarness runs web_fetch through the real pipeline with the network
// policy on and the given allow-list.
func fetchHarness(t *testing.T, wf WebFetchOptions, hosts ...string) *harness {
	t.Helper()
	if wf.Hosts == nil {
		wf.Hosts = func(context.Context) ([]string, error) { return hosts, nil }
	}
	h := newHarness(t, Options{WebFetch: wf})
	h.env.network = true
	return h
}

const page = `<!doctype html><html><head><title>T</title><style>body{color:red}</style>
<script>alert("x")</script></head><body>
<h1>Release notes</h1>
<p>Version <strong>2.0</strong> adds <a href="/docs/start.html">a guide</a> and <a href="more.html">more</a>.</p>
<ul><li>one</li><li>two</li></ul>
<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>
</body></html>`

func htmlHandler(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}
}

// An allow-listed loopback site is fetched and its HTML converted to
// markdown: headings, emphasis, lists and tables kept, links made absolute
// against the page, scripts and styles dropped.
func TestWebFetchHTMLToMarkdown(t *testing.T) {
	t.Parallel()
	s := newSite(t, htmlHandler(page))
	h := fetchHarness(t, WebFetchOptions{}, s.hostPort())
	r := h.run(ToolWebFetch, map[string]any{"url": s.URL + "/notes/index.html"})
	if r.IsError {
		t.Fatalf("fetch failed: %s", resultText(r))
	}
	text := resultText(r)
	for _, want := range []string{
		"URL: " + s.URL + "/notes/index.html", "Status: 200 OK", "Content-Type: text/html",
		"# Release notes", "**2.0**", "[a guide](" + s.URL + "/docs/start.html)", "[more](" + s.URL + "/notes/more.html)",
		"- one", "| k | v |",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("result lacks %q:\n%s", want, text)
		}
	}
	for _, bad := range []string{"alert", "color:red", "<h1>"} {
		if strings.Contains(text, bad) {
			t.Errorf("result keeps %q:\n%s", bad, text)
		}
	}
	m := decodeMeta[WebFetchMeta](t, r)
	if m.Status != 200 || m.ContentType != "text/html" || m.Bytes != int64(len(page)) || m.Truncated {
		t.Fatalf("meta %+v", m)
	}

	// raw: the source as text.
	r = h.run(ToolWebFetch, map[string]any{"url": s.URL, "format": "raw"})
	if !strings.Contains(resultText(r), "<h1>Release notes</h1>") {
		t.Fatalf("raw result %q", resultText(r))
	}
}

// Refusals: the policy off, loopback without an allow-list entry (by
// address, and by a name that resolves to loopback, so the check runs after
// DNS), an entry for another port, and an address reserved for the server
// even when allow-listed. No refused fetch reaches the site.
func TestWebFetchRefusals(t *testing.T) {
	t.Parallel()
	s := newSite(t, htmlHandler(page))
	resolver := fixedResolver{"docs.example.test": {netip.MustParseAddr("127.0.0.1")}, "mixed.example.test": {netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("::1")}}
	named := "http://docs.example.test:" + s.port() + "/"
	tests := []struct {
		name     string
		network  bool
		hosts    []string
		reserved func(netip.AddrPort) bool
		url      string
		code     string
		mention  string
	}{
		{"policy off", false, []string{s.hostPort()}, nil, s.URL, CodeNetworkOff, "network is off"},
		{"loopback not allow-listed", true, nil, nil, s.URL, CodeFetchRefused, "allow-list"},
		{"a name resolving to loopback", true, nil, nil, named, CodeFetchRefused, "127.0.0.1"},
		{"every address of a name is private", true, nil, nil, "http://mixed.example.test:" + s.port() + "/", CodeFetchRefused, "allow-list"},
		{"another port allow-listed", true, []string{"127.0.0.1:1"}, nil, s.URL, CodeFetchRefused, "allow-list"},
		{"localhost by IPv6", true, []string{s.hostPort()}, nil, "http://[::1]:" + s.port() + "/", CodeFetchRefused, "allow-list"},
		{"unspecified address", true, []string{"0.0.0.0"}, nil, "http://0.0.0.0:" + s.port() + "/", CodeFetchRefused, "not an address"},
		{"the server's own listener", true, []string{"127.0.0.1"}, func(ap netip.AddrPort) bool { return ap.String() == s.hostPort() }, s.URL, CodeFetchRefused, "belongs to this server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := fetchHarness(t, WebFetchOptions{Resolver: resolver, Reserved: tt.reserved}, tt.hosts...)
			h.env.network = tt.network
			before := s.hits.Load()
			text := mustCode(t, h.run(ToolWebFetch, map[string]any{"url": tt.url}), tt.code)
			if !strings.Contains(text, tt.mention) {
				t.Errorf("message %q lacks %q", text, tt.mention)
			}
			if n := s.hits.Load() - before; n != 0 {
				t.Errorf("%d requests reached the site", n)
			}
		})
	}

	// The same name allow-listed is fetched at its (loopback) address.
	h := fetchHarness(t, WebFetchOptions{Resolver: resolver}, "docs.example.test")
	if r := h.run(ToolWebFetch, map[string]any{"url": named}); r.IsError || !strings.Contains(resultText(r), "# Release notes") {
		t.Fatalf("allow-listed name: %s", resultText(r))
	}
}

// A redirect from an allowed site to a loopback address that is not
// allow-listed is refused at the hop; the target never sees a request. A
// redirect to an allow-listed one is followed.
func TestWebFetchRedirects(t *testing.T) {
	t.Parallel()
	target := newSite(t, htmlHandler("<p>secret admin page</p>"))
	front := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/admin", http.StatusFound)
	})
	h := fetchHarness(t, WebFetchOptions{}, front.hostPort())
	text := mustCode(t, h.run(ToolWebFetch, map[string]any{"url": front.URL}), CodeFetchRefused)
	if !strings.Contains(text, "127.0.0.1") || front.hits.Load() != 1 || target.hits.Load() != 0 {
		t.Fatalf("message %q, front %d, target %d hits", text, front.hits.Load(), target.hits.Load())
	}

	h = fetchHarness(t, WebFetchOptions{}, front.hostPort(), target.hostPort())
	r := h.run(ToolWebFetch, map[string]any{"url": front.URL})
	if r.IsError || !strings.Contains(resultText(r), "secret admin page") || !strings.Contains(resultText(r), "Redirected to: "+target.URL+"/admin") {
		t.Fatalf("followed redirect: %s", resultText(r))
	}
	if m := decodeMeta[WebFetchMeta](t, r); m.FinalURL != target.URL+"/admin" {
		t.Fatalf("meta %+v", m)
	}

	// A redirect loop stops.
	loop := newSite(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/again", http.StatusFound) })
	h = fetchHarness(t, WebFetchOptions{}, loop.hostPort())
	mustCode(t, h.run(ToolWebFetch, map[string]any{"url": loop.URL}), CodeFetchTooManyRedirs)
}

// Caps: the body read stops at MaxBytes, the text returned at MaxOutput,
// both marked; a site slower than the timeout gives FETCH_TIMEOUT.
func TestWebFetchCaps(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789", 10_000) // 100,000 bytes
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, big)
	})
	h := fetchHarness(t, WebFetchOptions{MaxBytes: 1000}, s.hostPort())
	r := h.run(ToolWebFetch, map[string]any{"url": s.URL})
	text := resultText(r)
	if r.IsError || !strings.Contains(text, "[... the body was cut at 1000 bytes ...]") || !strings.Contains(text, big[:1000]) || strings.Contains(text, big[:1001]) {
		t.Fatalf("size cap: %.300s", text)
	}
	if m := decodeMeta[WebFetchMeta](t, r); !m.Truncated || m.Bytes != 1000 {
		t.Fatalf("meta %+v", m)
	}

	h = fetchHarness(t, WebFetchOptions{MaxOutput: 500}, s.hostPort())
	text = resultText(h.run(ToolWebFetch, map[string]any{"url": s.URL}))
	if !strings.Contains(text, "[... content truncated: 99500 more characters ...]") {
		t.Fatalf("output cap: %.300s", text)
	}

	stall := newSite(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	h = fetchHarness(t, WebFetchOptions{Timeout: 200 * time.Millisecond}, stall.hostPort())
	start := time.Now()
	mustCode(t, h.run(ToolWebFetch, map[string]any{"url": stall.URL}), CodeFetchTimeout)
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("timeout took %v", d)
	}
}

// Content: an error status is an error result with the page's beginning;
// binary content is refused; JSON comes back as it is; a Latin-1 page is
// decoded.
func TestWebFetchContent(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/missing":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, "<h1>No such page</h1>")
		case "/image":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte("\x89PNG\r\n\x1a\n"))
		case "/data":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"ok": true}`)
		case "/latin1":
			w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1")
			w.Write([]byte("caf\xe9"))
		}
	})
	h := fetchHarness(t, WebFetchOptions{}, s.hostPort())
	tests := []struct {
		path, code, want string
	}{
		{"/missing", CodeFetchHTTPStatus, "HTTP 404 Not Found"},
		{"/image", CodeFetchUnsupported, "image/png"},
		{"/data", "", `{"ok": true}`},
		{"/latin1", "", "café"},
	}
	for _, tt := range tests {
		r := h.run(ToolWebFetch, map[string]any{"url": s.URL + tt.path})
		if errCode(r) != tt.code || !strings.Contains(resultText(r), tt.want) {
			t.Errorf("%s: code %q text %q", tt.path, errCode(r), resultText(r))
		}
	}
	if text := resultText(h.run(ToolWebFetch, map[string]any{"url": s.URL + "/missing"})); !strings.Contains(text, "# No such page") {
		t.Errorf("error page not converted: %q", text)
	}
}

// Arguments outside the schema (other schemes, no host) are refused before
// the body, and so are credentials in the URL.
func TestWebFetchArgs(t *testing.T) {
	t.Parallel()
	h := fetchHarness(t, WebFetchOptions{})
	for _, u := range []string{"ftp://example.com/x", "file:///etc/passwd", "http://", "example.com", "javascript:alert(1)"} {
		mustCode(t, h.run(ToolWebFetch, map[string]any{"url": u}), tools.CodeInvalidArgs)
	}
	mustCode(t, h.run(ToolWebFetch, map[string]any{"url": "https://example.com", "format": "pdf"}), tools.CodeInvalidArgs)
	mustCode(t, h.run(ToolWebFetch, map[string]any{"url": "http://user:pw@127.0.0.1/"}), CodeFetchRefused)
}

// In ask mode a fetch waits for approval, showing the URL; read-only mode
// refuses it.
func TestWebFetchPermission(t *testing.T) {
	t.Parallel()
	s := newSite(t, htmlHandler(page))
	h := fetchHarness(t, WebFetchOptions{}, s.hostPort())
	h.p.Pre = []tools.PreHook{tools.PermissionHook()}
	h.env.mode = session.ModeAsk
	h.env.approve = func(context.Context, *tools.Call, string) session.ApprovalOutcome { return session.ApprovalAllowedOnce }
	if r := h.run(ToolWebFetch, map[string]any{"url": s.URL}); r.IsError {
		t.Fatalf("approved fetch: %s", resultText(r))
	}
	if p := h.env.lastPreview(); p == nil || p.Kind != session.PreviewCommand || p.Command != "GET "+s.URL {
		t.Fatalf("preview %+v", p)
	}
	h.env.mode = session.ModeReadOnly
	before := s.hits.Load()
	if r := h.run(ToolWebFetch, map[string]any{"url": s.URL}); !r.IsError || !strings.Contains(resultText(r), "read-only") {
		t.Fatalf("read-only fetch: %s", resultText(r))
	}
	if s.hits.Load() != before {
		t.Fatal("a refused fetch reached the site")
	}
}

// fixedResolver answers from a table.
type fixedResolver map[string][]netip.Addr

func (f fixedResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if ips, ok := f[host]; ok {
		return ips, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}
