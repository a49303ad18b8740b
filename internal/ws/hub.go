package ws

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"harness/internal/auth"
	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/service"
	"harness/internal/session"
)

// Options tune a Hub; zero values take the defaults.
type Options struct {
	// SendBytes bounds each connection's send queue in bytes (default
	// 32 MiB). Frames wait there while the client reads slowly (a batch
	// subscriber's waiting events are coalesced when written); a live
	// frame that would take the queue past it cuts the connection with
	// 4008.
	SendBytes int64
	// HoldBytes bounds the live frames held for one subscriber while its
	// replay runs (default 32 MiB); beyond it the subscriber is slow.
	HoldBytes int64
	// MaxFrame is the largest client frame in bytes (default 1 MiB); a
	// larger one closes the connection with 1009.
	MaxFrame int64
	// PingInterval is the keepalive period (default 20 s).
	PingInterval time.Duration
	// WriteTimeout bounds one frame write while no other frame is
	// queued behind it (default 10 s): a dead peer is dropped. While
	// frames keep queuing, StallTimeout applies instead.
	WriteTimeout time.Duration
	// StallTimeout cuts a connection with 4008 when its socket has taken
	// nothing for this long while its send queue kept growing (default
	// 60 s): a client that stopped reading, whose frames would otherwise
	// wait in memory up to SendBytes.
	StallTimeout time.Duration
	// ReplayPage is how many events a replay reads at a time, and the most
	// events one session/events frame carries (default 256).
	ReplayPage int
	// SocketBuffer, when set, is each socket's kernel send buffer in
	// bytes (SO_SNDBUF; the kernel doubles it). Frames a client has not
	// taken wait in the send queue once it is full, where a batch
	// subscriber's are coalesced. Default: the kernel's own sizing, which
	// grows to megabytes for a client that reads slowly.
	SocketBuffer int

	// MaxSockets bounds the open sockets of one user (cookie and token
	// sockets together) and of one share link (default 64); the upgrade
	// beyond it is refused with 429 rate_limited.
	MaxSockets int
	// CommandRate is how many requests per second one socket may send on
	// average (default 50), CommandBurst how many at once (default 100);
	// requests beyond it are answered rate_limited without being run.
	CommandRate  float64
	CommandBurst int
}

// Defaults of the abuse limits.
const (
	DefaultMaxSockets   = 64
	DefaultCommandRate  = 50
	DefaultCommandBurst = 100
)

// DefaultSendBytes is the default of Options.SendBytes and HoldBytes.
const DefaultSendBytes = 32 << 20

// DefaultStallTimeout is the default of Options.StallTimeout.
const DefaultStallTimeout = 60 * time.Second

func (o Options) withDefaults() Options {
	if o.SendBytes <= 0 {
		o.SendBytes = DefaultSendBytes
	}
	if o.HoldBytes <= 0 {
		o.HoldBytes = DefaultSendBytes
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
	if o.StallTimeout <= 0 {
		o.StallTimeout = DefaultStallTimeout
	}
	if o.ReplayPage <= 0 {
		o.ReplayPage = 256
	}
	if o.MaxSockets <= 0 {
		o.MaxSockets = DefaultMaxSockets
	}
	if o.CommandRate <= 0 {
		o.CommandRate = DefaultCommandRate
	}
	if o.CommandBurst <= 0 {
		o.CommandBurst = DefaultCommandBurst
	}
	return o
}

// Service is what the hub asks of the service layer: authorization, the
// commands of docs/protocol.md, the context meter and the sidebars'
// changes.
type Service interface {
	Authorize(ctx context.Context, a *auth.Actor, id string, act auth.Action) (auth.SessionRole, error)
	LiveContext(ctx context.Context, id string) (service.ContextMeter, bool)
	SubscribeChanges(fn func(service.Change)) (cancel func())
	Audience(ctx context.Context, id string) ([]string, error)
	Row(ctx context.Context, a *auth.Actor, id string) (service.SessionRow, error)

	SendMessage(ctx context.Context, a *auth.Actor, id string, m service.Message) (string, error)
	Cancel(ctx context.Context, a *auth.Actor, id string, keepInbox bool) error
	EditQueueItem(ctx context.Context, a *auth.Actor, id, item, content string) error
	RemoveQueueItem(ctx context.Context, a *auth.Actor, id, item string) error
	SteerQueueItem(ctx context.Context, a *auth.Actor, id, item string) error
	RunQueue(ctx context.Context, a *auth.Actor, id string) error
	ClearQueue(ctx context.Context, a *auth.Actor, id string) error
	Approve(ctx context.Context, a *auth.Actor, id, approval string, d service.Decision) error
	RevokeTool(ctx context.Context, a *auth.Actor, id, tool string) error
	Answer(ctx context.Context, a *auth.Actor, id, question string, answers []session.Answer) error
	SetMode(ctx context.Context, a *auth.Actor, id string, mode session.PermissionMode) error
	SetModel(ctx context.Context, a *auth.Actor, id, provider, model string) error
	SetEffort(ctx context.Context, a *auth.Actor, id string, effort llm.Effort) error
	Compact(ctx context.Context, a *auth.Actor, id string) (service.CompactResult, error)
	RetryTurn(ctx context.Context, a *auth.Actor, id string, turn int, clientID string) (string, error)
}

// Manager is what the hub asks of the driver's manager: a pinned agent
// per followed session, and the agents' live notifications.
type Manager interface {
	Pin(ctx context.Context, id string) (*driver.Agent, func(), error)
	Lookup(id string) (*driver.Agent, bool)
	SubscribeLive(fn func(driver.LiveEvent)) (cancel func())
}

// Followed is what a topic follows: a local agent (*driver.Agent) or the
// mirror of a session another replica owns.
type Followed interface {
	Log() *session.Log
	Status() driver.Status
	Queue() driver.Queue
	PendingInteractions() []driver.Interaction
	AllowedTools() []string
}

// Remote reaches the sessions other replicas own (PostgreSQL replicas;
// internal/replica): subscriptions follow a mirror of the stored log, and
// commands run on the owner.
type Remote interface {
	// Follow mirrors session id; release ends the follow.
	Follow(ctx context.Context, id string) (Followed, func(), error)
	// Forward runs a protocol request on the owner of session id and
	// returns its Response frame.
	Forward(ctx context.Context, id string, a *auth.Actor, req []byte) ([]byte, error)
}

// Deps are a Hub's dependencies.
type Deps struct {
	Log     *slog.Logger
	Service Service
	Manager Manager
	// Projections makes a session's projection for subscribers that ask
	// for HTML; nil sends no html.
	Projections Projections
	// Access reports revocations so they cut open sockets at once; nil
	// leaves that to the keepalive's re-check.
	Access Access
	// Remote serves sessions owned by other replicas; nil: this process
	// owns every session (SQLite) or answers unavailable for the others.
	Remote Remote
	// TakeoverWait bounds how long a command for a session whose owner
	// cannot be reached waits for another replica (or this one) to take
	// the session over before it is answered unavailable (the lease TTL).
	TakeoverWait time.Duration
	// StoredHead reads a session's stored head. When set (replicas on
	// PostgreSQL), subscribers of local agents get only stored events:
	// the writer reports each commit through Hub.Stored. A client of a
	// replica that dies mid-turn then never holds an event the next
	// owner's repair replaces, so it resumes with since on any replica.
	StoredHead func(ctx context.Context, id string) (int64, error)
	Options    Options
}

// Hub serves the WebSocket and fans session events out to subscribers.
type Hub struct {
	log         *slog.Logger
	svc         Service
	mgr         Manager
	projections Projections
	access      Access
	remote      Remote
	wait        time.Duration
	storedHead  func(ctx context.Context, id string) (int64, error)
	opts        Options

	base   context.Context
	stop   context.CancelFunc
	cancel []func()

	mu     sync.Mutex
	conns  map[*conn]struct{}
	topics map[string]*topic
	// open counts the sockets per owner (socketOwner) against MaxSockets.
	open   map[string]int
	closed bool
	wg     sync.WaitGroup // connections

	changes *changeQueue
	revokes *accessQueue
	// beforeDispatch, when set (tests only), runs before each request.
	beforeDispatch func(Request)

	slowClosed atomic.Uint64
	framesOut  atomic.Uint64
	writesOut  atomic.Uint64 // socket writes of data frames (several frames may share one)
	// fanJobs hands shares of large fan-outs to the fan workers.
	fanJobs chan fanJob
}

// New builds a Hub and starts its sidebar worker. Close stops it.
func New(d Deps) *Hub {
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base, stop := context.WithCancel(context.Background())
	h := &Hub{
		log: log, svc: d.Service, mgr: d.Manager, projections: d.Projections, access: d.Access, remote: d.Remote, wait: d.TakeoverWait, storedHead: d.StoredHead, opts: d.Options.withDefaults(),
		base: base, stop: stop,
		conns: map[*conn]struct{}{}, topics: map[string]*topic{}, open: map[string]int{},
		fanJobs: make(chan fanJob),
	}
	for range runtime.GOMAXPROCS(0) - 1 {
		go h.fanWorker()
	}
	h.changes = newChangeQueue(h)
	h.cancel = append(h.cancel,
		h.mgr.SubscribeLive(h.onLive),
		h.svc.SubscribeChanges(h.changes.add),
	)
	go h.changes.run(base)
	if h.access != nil {
		h.revokes = newAccessQueue(h)
		h.cancel = append(h.cancel, h.access.SubscribeAccess(h.revokes.add))
		go h.revokes.run(base)
	}
	return h
}

// ServeHTTP upgrades an authenticated request (the actor is in the request
// context, see auth.ContextWithActor). The Origin check is the web layer's
// (RequireSameOrigin), so the library's own check is off here.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a := auth.ActorFromContext(r.Context())
	if a == nil {
		writeError(w, http.StatusUnauthorized, service.Errorf(service.CodeUnauthorized, "authentication required"))
		return
	}
	owner := socketOwner(a)
	switch h.reserve(owner) {
	case errClosed:
		writeError(w, http.StatusServiceUnavailable, service.Errorf(service.CodeUnavailable, "server shutting down"))
		return
	case errTooMany:
		h.log.Warn("websocket refused: too many sockets", "user", a.UserID, "via", a.Via, "max", h.opts.MaxSockets)
		writeError(w, http.StatusTooManyRequests, service.Errorf(service.CodeRateLimited,
			"too many open connections (at most %d per user or share link); close some and retry", h.opts.MaxSockets))
		return
	}
	hw := &hijackCapture{ResponseWriter: w, sendBuffer: h.opts.SocketBuffer}
	sock, err := websocket.Accept(hw, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		h.unreserve(owner)
		h.log.Debug("websocket accept", "err", err)
		return
	}
	c := h.newConn(sock, hw.wire, a)
	if !h.register(c) {
		h.unreserve(owner)
		_ = sock.Close(websocket.StatusGoingAway, ReasonShutdown)
		return
	}
	defer h.wg.Done()
	c.run()
}

// socketOwner is whom a socket counts against for MaxSockets: its user
// (cookie and token sockets together) or its share link.
func socketOwner(a *auth.Actor) string {
	if a.Via == auth.ViaShare {
		return "share:" + a.ShareLinkID
	}
	return "user:" + a.UserID
}

var (
	errClosed  = errors.New("hub closed")
	errTooMany = errors.New("too many sockets")
)

// reserve counts a socket against its owner's bound before the upgrade,
// so concurrent upgrades cannot overshoot it.
func (h *Hub) reserve(owner string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errClosed
	}
	if h.open[owner] >= h.opts.MaxSockets {
		return errTooMany
	}
	h.open[owner]++
	return nil
}

func (h *Hub) unreserve(owner string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unreserveLocked(owner)
}

func (h *Hub) unreserveLocked(owner string) {
	if h.open[owner] <= 1 {
		delete(h.open, owner)
		return
	}
	h.open[owner]--
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
	if _, ok := h.conns[c]; ok {
		delete(h.conns, c)
		h.unreserveLocked(socketOwner(c.actor))
	}
}

// writeError answers a refused upgrade with the REST error shape.
func writeError(w http.ResponseWriter, status int, e *service.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": e})
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
	SlowClosed    uint64 `json:"slowClosed"` // connections cut as slow consumers (queue bound or stall)
	FramesOut     uint64 `json:"framesOut"`  // frames written
	WritesOut     uint64 `json:"writesOut"`  // socket writes they took
}

// Stats returns the hub's figures.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := Stats{Conns: len(h.conns), Topics: len(h.topics), SlowClosed: h.slowClosed.Load(), FramesOut: h.framesOut.Load(), WritesOut: h.writesOut.Load()}
	for c := range h.conns {
		s.Subscriptions += c.subCount()
	}
	return s
}
