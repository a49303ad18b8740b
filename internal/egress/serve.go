package egress

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"time"
)

// Bytes that open a connection to the socket.
const (
	// holdByte opens a hold: the sandbox's bridge keeps one open while its
	// command runs, so the socket stays open as long as it is in use.
	holdByte  = 0x00
	socksByte = 0x05 // SOCKS version 5
	// anything else is HTTP
)

// accept serves e's socket until it closes.
func (p *Proxy) accept(e *entry) {
	for {
		c, err := e.ln.Accept()
		if err != nil {
			return
		}
		if e.active.Add(1) > MaxConns {
			e.active.Add(-1)
			if !e.warned.Swap(true) { // once per socket: a loop must not flood the log
				p.d.Log.Warn("egress: a session reached its connection limit; more are closed", "session", e.session, "limit", MaxConns)
			}
			c.Close()
			continue
		}
		go p.serveConn(e, &conn{Conn: c, r: bufio.NewReader(c), done: func() { e.active.Add(-1) }})
	}
}

// serveConn dispatches one connection by its first byte.
func (p *Proxy) serveConn(e *entry, c *conn) {
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	first, err := c.r.Peek(1)
	if err != nil {
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	switch first[0] {
	case holdByte:
		_, _ = c.r.Discard(1)
		_, _ = c.r.WriteTo(discard{}) // until the bridge ends
		c.Close()
	case socksByte:
		p.serveSOCKS(e, c)
	default:
		e.queue.push(c)
	}
}

// handler serves HTTP CONNECT and absolute-URI plain-HTTP requests.
func (p *Proxy) handler(e *entry) http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite:   func(*httputil.ProxyRequest) {}, // the absolute URL is the target; hop-by-hop headers go
		Transport: e.transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			refuse(w, err)
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect {
			p.connect(e, w, r)
			return
		}
		if r.URL.Scheme != "http" || r.URL.Host == "" {
			http.Error(w, "this is the sandbox's egress proxy: it serves CONNECT and absolute http:// URLs", http.StatusBadRequest)
			return
		}
		rp.ServeHTTP(w, r)
	})
}

// refuse answers a failed upstream connection: 403 with the policy's one
// line for a refusal, 502 otherwise.
func refuse(w http.ResponseWriter, err error) {
	var rf *Refusal
	if errors.As(err, &rf) {
		w.Header().Set("X-Harness-Refused", string(rf.Reason))
		http.Error(w, "harness: network: "+rf.Error(), http.StatusForbidden)
		return
	}
	http.Error(w, "harness: network: "+err.Error(), http.StatusBadGateway)
}

// connect opens a tunnel to r.Host.
func (p *Proxy) connect(e *entry, w http.ResponseWriter, r *http.Request) {
	up, err := p.dial(r.Context(), e, r.Host)
	if err != nil {
		refuse(w, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "cannot tunnel", http.StatusInternalServerError)
		return
	}
	down, rw, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if _, err := down.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		up.Close()
		down.Close()
		return
	}
	// What the client sent after its request (a TLS hello) goes first.
	if n := rw.Reader.Buffered(); n > 0 {
		b, _ := rw.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			up.Close()
			down.Close()
			return
		}
	}
	pipe(down, up, IdleTimeout)
}

// conn is an accepted connection read through the buffer that peeked at
// its first byte; closing it once frees its slot.
type conn struct {
	net.Conn
	r    *bufio.Reader
	once sync.Once
	done func()
}

func (c *conn) Read(b []byte) (int, error) { return c.r.Read(b) }

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.done)
	return err
}

// CloseWrite half-closes (the tunnel's end of one direction).
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// connQueue hands connections found to be HTTP to the session's server.
type connQueue struct {
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
	addr net.Addr
}

func newConnQueue(addr net.Addr) *connQueue {
	return &connQueue{ch: make(chan net.Conn), done: make(chan struct{}), addr: addr}
}

func (q *connQueue) push(c net.Conn) {
	select {
	case q.ch <- c:
	case <-q.done:
		c.Close()
	}
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.ch:
		return c, nil
	case <-q.done:
		return nil, net.ErrClosed
	}
}

func (q *connQueue) Close() error {
	q.once.Do(func() { close(q.done) })
	return nil
}

func (q *connQueue) Addr() net.Addr { return q.addr }

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }
