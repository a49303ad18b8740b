package egress

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A network-on sandbox has a network namespace of its own with only
// loopback in it; its one way out is this proxy. Each session gets a UNIX
// socket in a server-owned directory, bind-mounted into its sandboxes,
// where the proxy serves HTTP CONNECT, plain HTTP (absolute URIs) and
// SOCKS5 CONNECT, every connection dialled through a Guard. The socket
// identifies the session: a refusal is recorded in its log.

// Recorder hears what the proxy did, for the session's log and metrics.
type Recorder interface {
	Refused(ctx context.Context, sessionID string, r *Refusal)
	Allowed(ctx context.Context, sessionID string)
}

// ProxyDeps are the proxy's dependencies.
type ProxyDeps struct {
	Log *slog.Logger
	// Dir holds the sockets (created 0711: traversable, never listable;
	// the socket names are unguessable).
	Dir string
	// Hosts is the admin's allow-list (HARNESS_FETCH_HOSTS and Settings).
	Hosts func(ctx context.Context) ([]string, error)
	// Reserved reports this server's own listeners and database.
	Reserved func(netip.AddrPort) bool
	// Resolver looks names up; nil is net.DefaultResolver.
	Resolver Resolver
	// Recorder hears refusals and connections; nil records nothing.
	Recorder Recorder
}

// Limits of the proxy.
const (
	// MaxConns caps a session's open connections to its socket.
	MaxConns = 256
	// IdleTimeout ends a tunnel through which nothing moved for this long.
	IdleTimeout = 10 * time.Minute
	// dialTimeout bounds one connection attempt upstream.
	dialTimeout = 30 * time.Second
	// socketGrace keeps an unused socket open this long after it was last
	// handed out, so a command built just now finds it.
	socketGrace = time.Minute
	reapEvery   = 15 * time.Second
)

// Proxy is safe for concurrent use.
type Proxy struct {
	d    ProxyDeps
	stop chan struct{}

	mu      sync.Mutex
	entries map[string]*entry // by session id and extra hosts
	closed  bool
}

// entry is one session's socket.
type entry struct {
	key, session string
	extra        []string // hosts allowed besides the admin's list (a clone's git host)
	path         string
	ln           net.Listener
	http         *http.Server
	queue        *connQueue
	transport    *http.Transport
	active       atomic.Int32 // open connections, holds included
	warned       atomic.Bool  // the connection limit was logged
	lastUsed     time.Time    // under Proxy.mu
}

// NewProxy prepares the socket directory and starts closing unused sockets.
func NewProxy(d ProxyDeps) (*Proxy, error) {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Hosts == nil {
		d.Hosts = func(context.Context) ([]string, error) { return nil, nil }
	}
	if !filepath.IsAbs(d.Dir) {
		return nil, fmt.Errorf("egress: the socket directory must be absolute (got %q)", d.Dir)
	}
	if err := os.MkdirAll(d.Dir, 0o711); err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	if err := os.Chmod(d.Dir, 0o711); err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	p := &Proxy{d: d, stop: make(chan struct{}), entries: map[string]*entry{}}
	go p.reapLoop()
	return p, nil
}

// Socket is the path of session sessionID's proxy socket, opened now if it
// is not. extra are hosts this socket also allows at non-public addresses
// (a clone's admin-allowed git host); they get a socket of their own.
func (p *Proxy) Socket(_ context.Context, sessionID string, extra []string) (string, error) {
	key := sessionID + "\x00" + strings.Join(extra, "\x00")
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return "", errors.New("egress: the proxy is closed")
	}
	if e, ok := p.entries[key]; ok {
		e.lastUsed = time.Now()
		return e.path, nil
	}
	e, err := p.open(key, sessionID, extra)
	if err != nil {
		return "", err
	}
	p.entries[key] = e
	return e.path, nil
}

// open listens on a new socket for a session.
func (p *Proxy) open(key, sessionID string, extra []string) (*entry, error) {
	var b [10]byte
	_, _ = rand.Read(b[:])
	path := filepath.Join(p.d.Dir, strings.ToLower(base32.StdEncoding.EncodeToString(b[:]))+".sock")
	if len(path) > 107 {
		return nil, fmt.Errorf("egress: the socket path %s is too long for a UNIX socket; use a shorter data directory", path)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	// Any sandbox user may connect; the directory hides the name.
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("egress: %w", err)
	}
	e := &entry{key: key, session: sessionID, extra: extra, path: path, ln: ln, lastUsed: time.Now(),
		queue: newConnQueue(ln.Addr())}
	e.transport = &http.Transport{
		Proxy: nil, // never another proxy: it would connect past the guard
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return p.dial(ctx, e, addr)
		},
		MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second, MaxResponseHeaderBytes: 1 << 20,
	}
	e.http = &http.Server{Handler: p.handler(e), ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 64 << 10, ErrorLog: slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)}
	go func() { _ = e.http.Serve(e.queue) }()
	go p.accept(e)
	return e, nil
}

// dial connects upstream for e's session through a guard built now (the
// allow-list as it is), and records what happened.
func (p *Proxy) dial(ctx context.Context, e *entry, addr string) (net.Conn, error) {
	hosts, err := p.d.Hosts(ctx)
	if err != nil {
		return nil, fmt.Errorf("egress: the allow-list: %w", err)
	}
	g := NewGuard(append(hosts, e.extra...), p.d.Reserved, p.d.Resolver, dialTimeout)
	c, err := g.Dial(ctx, "tcp", addr)
	var rf *Refusal
	switch {
	case errors.As(err, &rf):
		// Debug: a hostile loop must not flood the log; the recorder
		// notes refusals at a bounded rate.
		p.d.Log.Debug("egress refused", "session", e.session, "target", rf.Short())
		if p.d.Recorder != nil {
			p.d.Recorder.Refused(context.WithoutCancel(ctx), e.session, rf)
		}
	case err == nil && p.d.Recorder != nil:
		p.d.Recorder.Allowed(ctx, e.session)
	}
	return c, err
}

// reapLoop closes the sockets nobody uses: no connection open (a running
// sandbox holds one) and none handed out within the grace period.
func (p *Proxy) reapLoop() {
	t := time.NewTicker(reapEvery)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		p.mu.Lock()
		for k, e := range p.entries {
			if e.active.Load() == 0 && time.Since(e.lastUsed) > socketGrace {
				delete(p.entries, k)
				e.close()
			}
		}
		p.mu.Unlock()
	}
}

// Close closes every socket (at shutdown); open tunnels end with the
// process.
func (p *Proxy) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	close(p.stop)
	for k, e := range p.entries {
		delete(p.entries, k)
		e.close()
	}
}

func (e *entry) close() {
	_ = e.ln.Close() // removes the socket file
	_ = e.http.Close()
	e.transport.CloseIdleConnections()
}
