package ws

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"harness/internal/auth"
	"harness/internal/driver"
	"harness/internal/service"
)

// Options tune a Hub; zero values take the defaults.
type Options struct {
	// SendQueue is each connection's queue length in frames (default 1024).
	SendQueue int
	// HoldLimit bounds the live frames held for one subscriber while its
	// replay runs (default 8192); beyond it the subscriber is slow.
	HoldLimit int
	// MaxFrame is the largest client frame in bytes (default 1 MiB); a
	// larger one closes the connection with 1009.
	MaxFrame int64
	// PingInterval is the keepalive period (default 20 s).
	PingInterval time.Duration
	// WriteTimeout bounds one frame write (default 10 s).
	WriteTimeout time.Duration
	// ReplayPage is how many events a replay reads at a time (default 256).
	ReplayPage int
}

func (o Options) withDefaults() Options {
	if o.SendQueue <= 0 {
		o.SendQueue = 1024
	}
	if o.HoldLimit <= 0 {
		o.HoldLimit = 8192
	}
	if o.MaxFrame <= 0 {
		o.MaxFrame = 1 << 20
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 20 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.ReplayPage <= 0 {
		o.ReplayPage = 256
	}
	return o
}

// Deps are a Hub's dependencies.
type Deps struct {
	Log      *slog.Logger
	Service  *service.Service
	Renderer Renderer // nil: NopRenderer
	Options  Options
}

// Hub serves the WebSocket and fans session events out to subscribers.
type Hub struct {
	log    *slog.Logger
	svc    *service.Service
	mgr    *driver.Manager
	render Renderer
	opts   Options

	base   context.Context
	stop   context.CancelFunc
	cancel []func()

	mu     sync.Mutex
	conns  map[*conn]struct{}
	topics map[string]*topic
	closed bool
	wg     sync.WaitGroup // connections

	changes *changeQueue
	// beforeDispatch, when set (tests only), runs before each request.
	beforeDispatch func(Request)

	slowClosed atomic.Uint64
	framesOut  atomic.Uint64
}

// New builds a Hub and starts its sidebar worker. Close stops it.
func New(d Deps) *Hub {
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := d.Renderer
	if r == nil {
		r = NopRenderer{}
	}
	base, stop := context.WithCancel(context.Background())
	h := &Hub{
		log: log, svc: d.Service, mgr: d.Service.Manager(), render: r, opts: d.Options.withDefaults(),
		base: base, stop: stop,
		conns: map[*conn]struct{}{}, topics: map[string]*topic{},
	}
	h.changes = newChangeQueue(h)
	h.cancel = append(h.cancel,
		h.mgr.SubscribeLive(h.onLive),
		h.svc.SubscribeChanges(h.changes.add),
	)
	go h.changes.run(base)
	return h
}

// ServeHTTP upgrades an authenticated request (the actor is in the request
// context, see auth.ContextWithActor). The Origin check is the web layer's
// (RequireSameOrigin), so the library's own check is off here.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a := auth.ActorFromContext(r.Context())
	if a == nil {
		http.Error(w, `{"error":{"code":"unauthorized","message":"authentication required"}}`, http.StatusUnauthorized)
		return
	}
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		http.Error(w, `{"error":{"code":"unavailable","message":"server shutting down"}}`, http.StatusServiceUnavailable)
		return
	}
	sock, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		h.log.Debug("websocket accept", "err", err)
		return
	}
	c := h.newConn(sock, a)
	if !h.register(c) {
		_ = sock.Close(websocket.StatusGoingAway, ReasonShutdown)
		return
	}
	defer h.wg.Done()
	c.run()
}

func (h *Hub) register(c *conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.conns[c] = struct{}{}
	h.wg.Add(1)
	return true
}

func (h *Hub) unregister(c *conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.conns, c)
}

// Close closes every socket with 1001 (going away) and waits for their
// goroutines, or until ctx ends. New upgrades are refused.
func (h *Hub) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	conns := make([]*conn, 0, len(h.conns))
	for c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	for _, c := range conns {
		c.close(websocket.StatusGoingAway, ReasonShutdown)
	}
	done := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		for _, c := range conns {
			c.closeNow()
		}
		err = errors.New("websocket connections did not close in time")
	}
	for _, cancel := range h.cancel {
		cancel()
	}
	h.stop()
	return err
}

// Stats are the hub's current figures.
type Stats struct {
	Conns         int    `json:"conns"`
	Topics        int    `json:"topics"`
	Subscriptions int    `json:"subscriptions"`
	SlowClosed    uint64 `json:"slowClosed"` // connections cut as slow consumers
	FramesOut     uint64 `json:"framesOut"`  // frames written
}

// Stats returns the hub's figures.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := Stats{Conns: len(h.conns), Topics: len(h.topics), SlowClosed: h.slowClosed.Load(), FramesOut: h.framesOut.Load()}
	for c := range h.conns {
		s.Subscriptions += c.subCount()
	}
	return s
}
