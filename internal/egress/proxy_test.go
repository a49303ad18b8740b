package egress

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/proxy"

	"harness/internal/testkit/poll"
)

// recorder keeps what the proxy recorded.
type recorder struct {
	mu      sync.Mutex
	refused []*Refusal
	allowed int
}

func (r *recorder) Refused(_ context.Context, id string, rf *Refusal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id == "s1" {
		r.refused = append(r.refused, rf)
	}
}

func (r *recorder) Allowed(context.Context, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.allowed++
}

func (r *recorder) last() (*Refusal, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.refused) == 0 {
		return nil, 0
	}
	return r.refused[len(r.refused)-1], len(r.refused)
}

// proxyFixture is a proxy whose allow-list is hosts, reached as session s1
// through its UNIX socket.
func proxyFixture(t *testing.T, hosts []string, reserved func(netip.AddrPort) bool) (*recorder, string) {
	t.Helper()
	rec := &recorder{}
	p, err := NewProxy(ProxyDeps{
		Dir:      t.TempDir(),
		Hosts:    func(context.Context) ([]string, error) { return hosts, nil },
		Reserved: reserved,
		Resolver: fixedResolver{"docs.example.test": {netip.MustParseAddr("127.0.0.1")}},
		Recorder: rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	sock, err := p.Socket(t.Context(), "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := p.Socket(t.Context(), "s1", nil); again != sock {
		t.Fatalf("a second socket for the same session: %s, %s", sock, again)
	}
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o666 {
		t.Fatalf("socket %s: %v %v", sock, fi.Mode(), err)
	}
	return rec, sock
}

// viaProxy is an HTTP client that uses the proxy on sock, as a tool with
// HTTP_PROXY/HTTPS_PROXY does.
func viaProxy(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "egress.invalid"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
}

func get(c *http.Client, u string) (int, string, error) {
	res, err := c.Get(u)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), nil
}

func hello(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "hello from "+name) }
}

// Plain HTTP and CONNECT reach an allow-listed loopback server; the same
// server at a port not listed, by address or by a name resolving to
// loopback (checked after DNS), and a listed address reserved for the
// server are refused with 403 and a line saying why, and recorded.
func TestProxyHTTP(t *testing.T) {
	t.Parallel()
	plain := httptest.NewServer(hello("plain"))
	t.Cleanup(plain.Close)
	tlsSite := httptest.NewTLSServer(hello("tls"))
	t.Cleanup(tlsSite.Close)
	other := httptest.NewServer(hello("other"))
	t.Cleanup(other.Close)
	reservedSite := httptest.NewServer(hello("the server itself"))
	t.Cleanup(reservedSite.Close)
	hostPort := func(u string) string { return strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://") }
	rec, sock := proxyFixture(t, []string{hostPort(plain.URL), hostPort(tlsSite.URL), hostPort(reservedSite.URL)},
		func(ap netip.AddrPort) bool { return ap.String() == hostPort(reservedSite.URL) })
	c := viaProxy(sock)

	for _, u := range []string{plain.URL, tlsSite.URL} {
		code, body, err := get(c, u)
		if err != nil || code != 200 || !strings.HasPrefix(body, "hello from") {
			t.Fatalf("%s: %d %q %v", u, code, body, err)
		}
	}
	_, port, _ := net.SplitHostPort(hostPort(other.URL))
	tests := []struct {
		url    string
		reason Reason
	}{
		{other.URL, ReasonLoopback},
		{"http://docs.example.test:" + port + "/", ReasonLoopback},
		{reservedSite.URL, ReasonServer},
		{"http://169.254.169.254/latest/meta-data/", ReasonMetadata},
		{"http://10.0.0.1:5432/", ReasonPrivate},
	}
	for _, tt := range tests {
		_, n0 := rec.last()
		code, body, err := get(c, tt.url)
		if err != nil || code != http.StatusForbidden || !strings.Contains(body, "refused to connect") {
			t.Errorf("%s: %d %q %v", tt.url, code, body, err)
		}
		rf, n := rec.last()
		if n != n0+1 || rf.Reason != tt.reason {
			t.Errorf("%s: recorded %+v (%d refusals), want reason %s", tt.url, rf, n-n0, tt.reason)
		}
	}
	// CONNECT to a port not listed: the tunnel is refused and recorded.
	_, n0 := rec.last()
	if _, _, err := get(c, "https://127.0.0.1:"+port+"/"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("CONNECT to a loopback port not listed: %v", err)
	}
	if rf, n := rec.last(); n != n0+1 || rf.Reason != ReasonLoopback || rf.Short() != "127.0.0.1:"+port+" (loopback)" {
		t.Errorf("CONNECT refusal recorded as %+v", rf)
	}
	// A request that is not a proxy request is answered, not forwarded.
	direct := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	if code, _, err := get(direct, "http://egress.invalid/"); err != nil || code != http.StatusBadRequest {
		t.Errorf("origin-form request: %d %v", code, err)
	}
}

// SOCKS5 (socks5h: the proxy resolves) follows the same policy.
func TestProxySOCKS5(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(hello("socks"))
	t.Cleanup(site.Close)
	other := httptest.NewServer(hello("other"))
	t.Cleanup(other.Close)
	rec, sock := proxyFixture(t, []string{strings.TrimPrefix(site.URL, "http://")}, nil)
	d, err := proxy.SOCKS5("unix", sock, nil, proxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{DialContext: d.(proxy.ContextDialer).DialContext}}
	if code, body, err := get(c, site.URL); err != nil || code != 200 || body != "hello from socks" {
		t.Fatalf("allowed: %d %q %v", code, body, err)
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(other.URL, "http://"))
	if _, _, err := get(c, "http://docs.example.test:"+port+"/"); err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Errorf("refused: %v", err)
	}
	if rf, n := rec.last(); n != 1 || rf.Reason != ReasonLoopback || rf.Host != "docs.example.test" {
		t.Errorf("recorded %+v (%d)", rf, n)
	}
}

// Close removes the sockets.
func TestProxyClose(t *testing.T) {
	t.Parallel()
	p, err := NewProxy(ProxyDeps{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sock, err := p.Socket(t.Context(), "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("the socket outlived the proxy: %v", err)
	}
	if _, err := p.Socket(t.Context(), "s1", nil); err == nil {
		t.Error("a closed proxy handed out a socket")
	}
}

// A session holds at most MaxConns connections to its socket: the next one
// is closed at once; when one ends, a new one is served.
func TestProxyConnectionLimit(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(hello("site"))
	t.Cleanup(site.Close)
	_, sock := proxyFixture(t, []string{strings.TrimPrefix(site.URL, "http://")}, nil)
	var holds []net.Conn
	for range MaxConns {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte{holdByte}); err != nil {
			t.Fatal(err)
		}
		holds = append(holds, c)
	}
	extra, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := extra.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the connection over the limit: read %d, %v; want it closed", n, err)
	}
	holds[0].Close()
	// Once the proxy has seen the hold end, a request is served again.
	poll.Eventually(t, "a request served again", func() bool {
		code, _, _ := get(viaProxy(sock), site.URL)
		return code == 200
	}, poll.Within(10*time.Second), poll.Every(10*time.Millisecond))
	for _, c := range holds[1:] {
		c.Close()
	}
}
