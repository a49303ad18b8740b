package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"harness/client"
	"harness/internal/testkit/poll"
)

// nginxBin is where Debian installs nginx (not on a non-root PATH).
const nginxBin = "/usr/sbin/nginx"

// requireNginx returns the nginx binary, or skips loudly; with
// HARNESS_TEST_REQUIRE_NGINX=1 (.ci/run) a missing nginx fails instead.
func requireNginx(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("spawns servers and nginx; skipped with -short")
	}
	if _, err := os.Stat(nginxBin); err == nil {
		return nginxBin
	}
	if os.Getenv("HARNESS_TEST_REQUIRE_NGINX") == "1" {
		t.Fatalf("nginx is required (HARNESS_TEST_REQUIRE_NGINX=1) but %s is missing: apt-get install nginx", nginxBin)
	}
	t.Skip("!!! SKIPPING: " + nginxBin + " is not installed (apt-get install nginx; .ci/run does) !!!")
	return ""
}

// nginxProc is deploy/nginx.conf running in front of replicas.
type nginxProc struct {
	HTTPS string // https://127.0.0.1:port
	HTTP  string // http://127.0.0.1:port
	Roots *x509.CertPool
}

var upstreamServer = regexp.MustCompile(`server harness-\d:8080`)

// startNginx runs Debian's nginx on deploy/nginx.conf with the replicas
// as its upstream: the file is used as shipped except for the listen
// ports, the upstream addresses, a certificate made here, one worker (so
// round robin is one sequence) and paths under a directory of the test.
func startNginx(t *testing.T, bin string, replicas []*serverProc) nginxProc {
	t.Helper()
	src, err := os.ReadFile("../../deploy/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: nginx's workers run as nobody when the master is
	// root and must reach their temp directories.
	dir, err := os.MkdirTemp("", "harness-nginx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	crt, key, roots := selfSignedCert(t)
	crtPath, keyPath := filepath.Join(dir, "harness.crt"), filepath.Join(dir, "harness.key")
	if err := os.WriteFile(crtPath, crt, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, key, 0o600); err != nil {
		t.Fatal(err)
	}
	httpPort, httpsPort := freePort(t), freePort(t)

	conf := string(src)
	i := 0
	conf = upstreamServer.ReplaceAllStringFunc(conf, func(string) string {
		u, err := url.Parse(replicas[i%len(replicas)].URL)
		if err != nil {
			t.Fatal(err)
		}
		i++
		return "server " + u.Host
	})
	if i != len(replicas) {
		t.Fatalf("deploy/nginx.conf lists %d upstream replicas, want %d", i, len(replicas))
	}
	for _, r := range []struct{ old, new string }{
		{"worker_processes auto;", "worker_processes 1;"},
		{"listen 80;", fmt.Sprintf("listen 127.0.0.1:%d;", httpPort)},
		{"listen 443 ssl;", fmt.Sprintf("listen 127.0.0.1:%d ssl;", httpsPort)},
		{"/etc/nginx/tls/harness.crt", crtPath},
		{"/etc/nginx/tls/harness.key", keyPath},
		{"http {", "http {\n" + nginxPaths(dir)},
	} {
		if strings.Count(conf, r.old) != 1 {
			t.Fatalf("deploy/nginx.conf: want %q once", r.old)
		}
		conf = strings.Replace(conf, r.old, r.new, 1)
	}
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	errLog := filepath.Join(dir, "error.log")
	cmd := exec.Command(bin, "-p", dir, "-e", errLog, "-c", confPath,
		"-g", "daemon off; pid "+filepath.Join(dir, "nginx.pid")+";")
	outPath := filepath.Join(dir, "output.log")
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			o, _ := os.ReadFile(outPath)
			b, _ := os.ReadFile(errLog)
			t.Logf("nginx output:\n%s\nerror.log:\n%s", o, b)
		}
	})
	up := poll.Wait(t, func() bool {
		select {
		case <-exited:
			return false
		default:
		}
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", httpsPort))
		if err != nil {
			return false
		}
		_ = c.Close()
		return true
	}, poll.Within(20*time.Second))
	if !up {
		t.Fatal("nginx did not start (its logs follow)")
	}
	return nginxProc{
		HTTPS: fmt.Sprintf("https://127.0.0.1:%d", httpsPort),
		HTTP:  fmt.Sprintf("http://127.0.0.1:%d", httpPort),
		Roots: roots,
	}
}

// nginxPaths keeps every file nginx writes under dir.
func nginxPaths(dir string) string {
	var b strings.Builder
	for _, d := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		fmt.Fprintf(&b, "    %s_temp_path %s;\n", d, filepath.Join(dir, d))
	}
	fmt.Fprintf(&b, "    access_log %s;\n", filepath.Join(dir, "access.log"))
	return b.String()
}

// freePort is a loopback port nobody listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// selfSignedCert is a certificate for 127.0.0.1 and its key (PEM), and a
// pool that trusts it.
func selfSignedCert(t *testing.T) (crt, key []byte, roots *x509.CertPool) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "harness test"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots = x509.NewCertPool()
	roots.AddCert(cert)
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), roots
}

// browserFrom is an HTTP client whose connections come from the loopback
// address from (127.0.0.2, ...: another client than nginx, which reaches
// the replicas from 127.0.0.1), trusting roots, following no redirect,
// with a cookie jar unless noJar (a client that sets Cookie itself).
func browserFrom(from string, roots *x509.CertPool, noJar bool) *http.Client {
	var jar http.CookieJar
	if !noJar {
		jar, _ = cookiejar.New(nil)
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	return &http.Client{
		Jar:     jar,
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext:     d.DialContext,
			TLSClientConfig: &tls.Config{RootCAs: roots},
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// tryLogin posts the login form at base as c (the login page first, for
// its CSRF token and cookie), with extra headers, and returns the answer's
// status and the cookies it set.
func tryLogin(t *testing.T, c *http.Client, base, name, pass string, extra http.Header) (int, []*http.Cookie) {
	t.Helper()
	page, body := getAs(t, c, base+"/login", extra)
	m := csrfField.FindSubmatch(body)
	if page.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("login page: %s %s", page.Status, body)
	}
	form := url.Values{"_csrf": {string(m[1])}, "name": {name}, "password": {pass}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/login", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range extra {
		req.Header[k] = v
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, slices.Concat(page.Cookies(), res.Cookies())
}

// getAs GETs u as c with extra headers.
func getAs(t *testing.T, c *http.Client, u string, extra http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

// cookieNamed is the last cookie called name, or nil.
func cookieNamed(cs []*http.Cookie, name string) *http.Cookie {
	var out *http.Cookie
	for _, c := range cs {
		if c.Name == name {
			out = c
		}
	}
	return out
}

// deploy/nginx.conf, run by Debian's nginx over TLS in front of three
// replicas on one PostgreSQL database, each trusting 127.0.0.1 (nginx) as
// a proxy. A browser at 127.0.0.2 signs in through nginx and gets Secure
// cookies (nginx's X-Forwarded-Proto is believed); with its cookie it
// creates a session over REST and follows it on a WebSocket (the Origin
// check passes: nginx keeps the Host and its port), sends a message, and
// the socket streams the turn to its end whichever replica runs it. The
// same browser talking to a replica directly, claiming https and another
// address in the headers, gets no Secure cookie and is logged as itself.
// nginx answers 404 for /internal/ and sends plain HTTP to HTTPS. Failed
// logins through nginx count against the browser's address, whatever
// X-Forwarded-For it sends: after 127.0.0.3 is refused by every replica,
// 127.0.0.4 still signs in through the same nginx, and no replica logged
// nginx's address, or a spoofed one, for a login.
func TestNginxInFrontOfReplicas(t *testing.T) {
	bin := requireNginx(t)
	if os.Getenv(pgDSNEnv) == "" {
		t.Skip("!!! SKIPPING: replicas need PostgreSQL; set " + pgDSNEnv + " (.ci/run does) !!!")
	}
	t.Parallel()
	b := backends(t)[1].make(t)
	dir := t.TempDir()
	b.token(t, dir) // the admin "replica", password "replica-password"
	var replicas []*serverProc
	for i := range 3 {
		env := append(slices.Clone(b.env),
			"HARNESS_REPLICA_ID=nginx-"+string(rune('a'+i)),
			"HARNESS_TRUSTED_PROXIES=127.0.0.1/32")
		replicas = append(replicas, startServer(t, dir, env...))
	}
	ng := startNginx(t, bin, replicas)
	ctx := t.Context()

	// Sign in through nginx over TLS: Secure cookies.
	browser := browserFrom("127.0.0.2", ng.Roots, false)
	status, cookies := tryLogin(t, browser, ng.HTTPS, "replica", "replica-password", nil)
	if status != http.StatusSeeOther {
		t.Fatalf("login through nginx: %d", status)
	}
	login := cookieNamed(cookies, "harness_session")
	if login == nil {
		t.Fatal("no login cookie through nginx")
	}
	if !login.Secure || !login.HttpOnly {
		t.Errorf("login cookie through nginx over TLS: %+v, want Secure and HttpOnly", login)
	}
	for _, c := range cookies {
		if !c.Secure {
			t.Errorf("cookie %s set without Secure through nginx over TLS", c.Name)
		}
	}
	_, page := getAs(t, browser, ng.HTTPS+"/", nil)
	m := csrfField.FindSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the signed-in page: %s", page)
	}

	// REST and the WebSocket through nginx, with the browser's cookie.
	api := browserFrom("127.0.0.2", ng.Roots, true)
	c := client.New(ng.HTTPS, client.WithCookie(login.Value, string(m[1])), client.WithHTTPClient(api))
	s, err := c.CreateSession(ctx, client.NewSession{Title: "through nginx", Mode: "auto"})
	if err != nil {
		t.Fatalf("create a session through nginx: %v", err)
	}
	cn, err := c.Dial(ctx)
	if err != nil {
		t.Fatalf("WebSocket through nginx: %v", err)
	}
	defer cn.Close()
	sub, err := cn.Subscribe(ctx, s.ID, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessage(ctx, s.ID, "long: 200", "followup"); err != nil {
		t.Fatalf("send through nginx: %v", err)
	}
	var types []string
	deadline := time.After(60 * time.Second)
	for !slices.Contains(types, "turn/end") {
		select {
		case p, ok := <-sub.C:
			if !ok {
				t.Fatalf("subscription through nginx ended; got %v", types)
			}
			if p.Event != nil {
				types = append(types, p.Event.Type)
			}
		case <-deadline:
			t.Fatalf("no turn/end through nginx's WebSocket; got %v", types)
		}
	}
	if !slices.Contains(types, "user/message") || !slices.Contains(types, "assistant/chunk") {
		t.Errorf("the socket through nginx missed the turn: %v", types)
	}

	// The same browser straight at a replica (not a trusted proxy):
	// its headers are not believed.
	direct := browserFrom("127.0.0.2", nil, false)
	lie := http.Header{"X-Forwarded-Proto": {"https"}, "X-Forwarded-For": {"198.51.100.7"}}
	status, cookies = tryLogin(t, direct, replicas[0].URL, "replica", "replica-password", lie)
	if ck := cookieNamed(cookies, "harness_session"); status != http.StatusSeeOther || ck == nil || ck.Secure {
		t.Errorf("direct login claiming https: %d %+v, want a cookie without Secure", status, ck)
	}
	if status, _ := tryLogin(t, browserFrom("127.0.0.2", nil, false), replicas[0].URL, "replica", "wrong", lie); status != http.StatusUnauthorized {
		t.Errorf("direct failed login: %d", status)
	}

	// nginx itself: /internal/ is not reachable, plain HTTP redirects.
	if res, _ := getAs(t, browser, ng.HTTPS+"/internal/replica/statuses", nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("/internal/ through nginx: %s, want 404", res.Status)
	}
	if res, _ := getAs(t, browser, ng.HTTP+"/login", nil); res.StatusCode != http.StatusPermanentRedirect ||
		!strings.HasPrefix(res.Header.Get("Location"), "https://") {
		t.Errorf("plain HTTP through nginx: %s %q, want a 308 to https", res.Status, res.Header.Get("Location"))
	}

	// Login limits through nginx count the browser's address: 127.0.0.3
	// fails until refused (each replica keeps its own counts, so by then
	// every replica refuses it: round robin, one worker), though it
	// names another address in X-Forwarded-For each time, which nginx
	// passes on to the left of the real one...
	guesser := browserFrom("127.0.0.3", ng.Roots, false)
	refused := false
	for i := range 30 {
		spoof := http.Header{"X-Forwarded-For": {fmt.Sprintf("192.0.2.%d", i+1)}}
		st, _ := tryLogin(t, guesser, ng.HTTPS, "replica", "wrong", spoof)
		if st == http.StatusTooManyRequests {
			refused = true
			break
		}
		if st != http.StatusUnauthorized {
			t.Fatalf("failed login through nginx: %d", st)
		}
	}
	if !refused {
		t.Fatal("30 failed logins through nginx were never refused")
	}
	for range 3 {
		if st, _ := tryLogin(t, guesser, ng.HTTPS, "replica", "replica-password", nil); st != http.StatusTooManyRequests {
			t.Errorf("the refused address signed in through nginx: %d", st)
		}
	}
	// ...while 127.0.0.4, through the same nginx, signs in on every replica.
	for range 3 {
		// A new browser each time: a signed-in one is sent past /login.
		other := browserFrom("127.0.0.4", ng.Roots, false)
		if st, _ := tryLogin(t, other, ng.HTTPS, "replica", "replica-password", nil); st != http.StatusSeeOther {
			t.Errorf("another address through nginx after 127.0.0.3 was limited: %d, want 303", st)
		}
	}
	poll.Eventually(t, "the replicas to log the failed logins", func() bool {
		n := 0
		for _, r := range replicas {
			n += strings.Count(r.logs.String(), "addr=127.0.0.3")
		}
		return n >= 15
	}, poll.Within(10*time.Second))
	for i, r := range replicas {
		logs := r.logs.String()
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, "login") && strings.Contains(line, "addr=127.0.0.1") {
				t.Errorf("replica %d logged nginx's address for a login: %s", i, line)
			}
			if strings.Contains(line, "198.51.100.7") || strings.Contains(line, "192.0.2.") {
				t.Errorf("replica %d believed a direct client's X-Forwarded-For: %s", i, line)
			}
		}
	}
	if !slices.ContainsFunc(strings.Split(replicas[0].logs.String(), "\n"), func(l string) bool {
		return strings.Contains(l, `msg="login failed"`) && strings.Contains(l, "addr=127.0.0.2")
	}) {
		t.Errorf("the direct failed login was not logged as 127.0.0.2:\n%s", replicas[0].logs)
	}
}
