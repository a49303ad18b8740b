package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"harness/internal/auth"
	"harness/internal/driver"
	"harness/internal/models"
	"harness/internal/session"
)

// LiveChannel carries the live notifications of every replica's agents.
const LiveChannel = "harness_live"

// Store is what mirrors read of the stored logs.
type Store interface {
	ReadLog(ctx context.Context, id string) (*session.Log, error)
	EventsSince(ctx context.Context, id string, since int64, limit int) ([]session.Event, error)
}

// Leases is what a replica asks of the lease table.
type Leases interface {
	// Holder is the replica holding a session's lease now (ok false when
	// nobody does).
	Holder(ctx context.Context, id string) (owner, addr string, ok bool, err error)
	// Holders is Holder for many sessions (those nobody holds are absent).
	Holders(ctx context.Context, ids []string) (map[string]models.LeaseHolder, error)
	// Orphaned lists sessions whose holder stopped renewing, or handed
	// them over.
	Orphaned(ctx context.Context, limit int) ([]string, error)
	// Owned lists the sessions whose lease names this replica's id.
	Owned(ctx context.Context) ([]string, error)
}

// Bus is PostgreSQL's LISTEN/NOTIFY (models.DB).
type Bus interface {
	Notify(ctx context.Context, channel, payload string) error
	Listen(ctx context.Context, log *slog.Logger, channels []string, h models.ListenHandler) error
}

// Manager is what a replica asks of this process's agents.
type Manager interface {
	Lookup(id string) (*driver.Agent, bool)
	SubscribeLive(fn func(driver.LiveEvent)) (cancel func())
	PublishRemote(ev driver.LiveEvent)
	TakeOver(ctx context.Context, id string) error
}

// Deps are a Replica's collaborators.
type Deps struct {
	Log     *slog.Logger
	ID      string // this replica
	Key     []byte // signs requests between replicas
	Bus     Bus
	Store   Store
	Leases  Leases
	Manager Manager
	// TTL is the lease TTL: a takeover pass gives up after it.
	TTL time.Duration
	// Heartbeat is the owners' heartbeat period: orphaned leases are
	// looked for about as often (default: an eighth of TTL).
	Heartbeat time.Duration
	// Client sends requests to other replicas (default: a client with
	// keep-alive connections).
	Client *http.Client
	// ReloadSettings reads settings of a kind (SettingsRoutes,
	// SettingsMCP) again after another replica changed them; nil: none.
	ReloadSettings func(ctx context.Context, kind string) error
	// RemoteAccess receives the access changes other replicas made
	// (auth.Service.PublishRemote); it must not block. nil: ignored.
	RemoteAccess func(auth.AccessChange)
}

// Replica is this process's part in the replica set.
type Replica struct {
	log    *slog.Logger
	d      Deps
	client *http.Client

	base   context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup
	cancel func()

	// exec runs a command forwarded by another replica (the hub's).
	execMu sync.RWMutex
	exec   Executor

	mu      sync.Mutex
	mirrors map[string]*Mirror

	// statuses of the sessions other replicas run (status.go).
	statusMu sync.Mutex
	statuses map[string]remoteStatus

	out *outbox // live notifications to send, in order

	// kick asks the takeover loop for a pass now (a handover notice).
	kick chan struct{}
	// draining: this replica shuts down and takes no session over.
	draining atomic.Bool
}

// New builds a replica's parts; Start starts them.
func New(d Deps) *Replica {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.TTL <= 0 {
		d.TTL = driver.DefaultLeaseTTL
	}
	if d.Heartbeat <= 0 {
		d.Heartbeat = d.TTL / 8
	}
	c := d.Client
	if c == nil {
		c = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: time.Minute}}
	}
	base, stop := context.WithCancel(context.Background())
	return &Replica{log: d.Log, d: d, client: c, base: base, stop: stop, mirrors: map[string]*Mirror{}, statuses: map[string]remoteStatus{}, out: newOutbox(), kick: make(chan struct{}, 1)}
}

// Start listens to the other replicas, sends this replica's live
// notifications, takes back the leases a dead process of the same id held
// and looks for orphaned or handed-over sessions to take over.
func (r *Replica) Start() {
	r.cancel = r.d.Manager.SubscribeLive(r.onLocalLive)
	r.wg.Add(4)
	go func() {
		defer r.wg.Done()
		_ = r.d.Bus.Listen(r.base, r.log, []string{models.HeadsChannel, LiveChannel, SettingsChannel, AccessChannel, models.LeaseChannel}, models.ListenHandler{
			Notification: r.onNotification,
			Connected:    r.onConnected,
		})
	}()
	go func() {
		defer r.wg.Done()
		r.sendLoop()
	}()
	go func() {
		defer r.wg.Done()
		r.takeoverLoop()
	}()
	go func() {
		defer r.wg.Done()
		r.takeBack()
	}()
}

// Drain stops taking sessions over: this replica is shutting down, and
// would only hand them over again.
func (r *Replica) Drain() { r.draining.Store(true) }

// Close stops the replica's goroutines and its mirrors.
func (r *Replica) Close() {
	if r.cancel != nil {
		r.cancel()
	}
	r.stop()
	r.out.close()
	r.wg.Wait()
}

// liveWire is one live notification on LiveChannel.
type liveWire struct {
	From  string            `json:"o"`
	Kind  driver.LiveKind   `json:"k"`
	Event *driver.LiveEvent `json:"e,omitempty"`
	// Session is set on kindStale: a notification too large to send; the
	// receivers ask the owner for the session's live state instead.
	Session string `json:"s,omitempty"`
}

const kindStale driver.LiveKind = "replica/stale"

// onLocalLive sends this replica's agents' live notifications to the
// others (not the ones it received from them) and keeps a local mirror's
// state current.
func (r *Replica) onLocalLive(ev driver.LiveEvent) {
	if ev.Origin != "" {
		return
	}
	if m := r.mirror(ev.Session); m != nil {
		m.apply(ev)
	}
	if ev.Kind == driver.LiveUnloaded {
		// An unload is this replica's business: the stored log stays,
		// and mirrors elsewhere go on following it.
		return
	}
	b, err := json.Marshal(liveWire{From: r.d.ID, Kind: ev.Kind, Event: &ev})
	if err == nil && len(b) > models.NotifyPayloadMax {
		b, err = json.Marshal(liveWire{From: r.d.ID, Kind: kindStale, Session: ev.Session})
	}
	if err != nil {
		r.log.Error("encode live notification", "session", ev.Session, "err", err)
		return
	}
	r.out.put(string(b))
}

// sendLoop sends the queued live notifications in order.
func (r *Replica) sendLoop() {
	var batch []string
	for {
		var ok bool
		if batch, ok = r.out.take(batch); !ok {
			return
		}
		for i, p := range batch {
			ctx, cancel := context.WithTimeout(r.base, 5*time.Second)
			if err := r.d.Bus.Notify(ctx, LiveChannel, p); err != nil && r.base.Err() == nil {
				r.log.Warn("send live notification to the other replicas", "err", err)
			}
			cancel()
			batch[i] = ""
		}
	}
}

// onNotification runs on the listener's goroutine.
func (r *Replica) onNotification(channel, payload string) {
	switch channel {
	case models.LeaseChannel:
		// A draining replica handed a session with queued input over:
		// take it now rather than at the next pass.
		r.kickTakeover()
	case models.HeadsChannel:
		for id, head := range models.ParseHeads(payload) {
			if m := r.mirror(id); m != nil {
				m.announce(head)
			}
		}
	case SettingsChannel:
		r.onSettings(payload)
	case AccessChannel:
		r.onAccess(payload)
	case LiveChannel:
		var w liveWire
		if err := json.Unmarshal([]byte(payload), &w); err != nil {
			r.log.Warn("malformed live notification from a replica", "err", err)
			return
		}
		if w.From == r.d.ID {
			return // our own, sent back to us
		}
		if w.Kind == kindStale {
			if m := r.mirror(w.Session); m != nil {
				m.kickState()
			}
			return
		}
		if w.Event == nil {
			return
		}
		ev := *w.Event
		ev.Kind, ev.Origin = w.Kind, w.From
		if ev.Kind == driver.LiveStatus {
			r.noteStatus(ev.Session, w.From, ev.Status, false)
		}
		if m := r.mirror(ev.Session); m != nil {
			m.apply(ev)
		}
		r.d.Manager.PublishRemote(ev)
	}
}

// onConnected runs after every (re)connection of the listener: heads
// announced while it was away were missed, so every mirror catches up.
func (r *Replica) onConnected() {
	r.forgetStatuses()
	r.mu.Lock()
	for _, m := range r.mirrors {
		m.kick()
		m.kickState()
	}
	r.mu.Unlock()
	// A settings change announced while the listener was away (or before
	// it first connected, after the start read the settings) was missed.
	r.reloadSettings(settingsKinds...)
	// So was a handover notice.
	r.kickTakeover()
}

// kickTakeover asks the takeover loop for a pass now; it does not block
// (a pass already asked for covers this one).
func (r *Replica) kickTakeover() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// takeoverLoop takes over, about every heartbeat, the sessions whose owner
// stopped renewing their leases: a killed owner's sessions move within
// about the stale bound plus two heartbeats of its death (its heartbeat
// goes stale at most a stale bound after its last renewal). A handover
// notice asks for a pass at once: a draining replica's queued sessions
// move as soon as it released them (every live replica tries; the lease
// decides).
func (r *Replica) takeoverLoop() {
	period := r.d.Heartbeat
	for {
		// Jitter, so the replicas do not all try at the same moment.
		wait := period/2 + time.Duration(rand.Int64N(int64(period)))
		select {
		case <-r.base.Done():
			return
		case <-r.kick:
		case <-time.After(wait):
		}
		r.takeOver()
	}
}

func (r *Replica) takeOver() {
	if r.draining.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(r.base, r.d.TTL)
	defer cancel()
	ids, err := r.d.Leases.Orphaned(ctx, 64)
	if err != nil {
		if r.base.Err() == nil {
			r.log.Warn("look for orphaned sessions", "err", err)
		}
		return
	}
	r.takeAll(ctx, ids)
}

// takeBack takes, at start, the sessions whose lease still names this
// replica's id: a process of the same id died holding them, and this one
// need not wait for them to lapse (a replica id stable across restarts,
// docs/deploy.md).
func (r *Replica) takeBack() {
	ctx, cancel := context.WithTimeout(r.base, r.d.TTL)
	defer cancel()
	ids, err := r.d.Leases.Owned(ctx)
	if err != nil {
		if r.base.Err() == nil {
			r.log.Warn("look for the sessions this replica's id held", "err", err)
		}
		return
	}
	if len(ids) > 0 {
		r.log.Info("taking back the sessions a previous process of this replica held", "sessions", len(ids))
	}
	r.takeAll(ctx, ids)
}

// takeoverWorkers is how many sessions one pass takes over at once: a dead
// owner's hundred sessions move in a few load times, not a hundred.
const takeoverWorkers = 8

// takeAll takes the sessions over, a few at once, in an order of its own:
// the replicas racing for a dead owner's sessions mostly take different
// ones rather than all queue on the same first lease.
func (r *Replica) takeAll(ctx context.Context, ids []string) {
	rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	work := make(chan string)
	var wg sync.WaitGroup
	for range min(takeoverWorkers, len(ids)) {
		wg.Go(func() {
			for id := range work {
				r.takeOne(ctx, id)
			}
		})
	}
	for _, id := range ids {
		if r.draining.Load() {
			break
		}
		work <- id
	}
	close(work)
	wg.Wait()
}

func (r *Replica) takeOne(ctx context.Context, id string) {
	if _, live := r.d.Manager.Lookup(id); live {
		// Ours already (its lease names this replica: resumed at start,
		// or a request loaded it): nothing to take or repair.
		return
	}
	err := r.d.Manager.TakeOver(ctx, id)
	switch {
	case err == nil, errors.Is(err, driver.ErrNotOwner), errors.Is(err, models.ErrNotFound), errors.Is(err, driver.ErrDisposed):
	case errors.Is(err, driver.ErrUnreachable):
		r.log.Info("orphaned session left to a replica that reaches its workspace", "session", id, "err", err)
	default:
		r.log.Warn("take over an orphaned session", "session", id, "err", err)
	}
}

// mirror returns id's mirror, if this replica has one.
func (r *Replica) mirror(id string) *Mirror {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mirrors[id]
}

// errNoOwner says no live replica holds the session's lease.
var errNoOwner = errors.New("no replica holds the session's lease")

// owner is the address of the replica holding id's lease.
func (r *Replica) owner(ctx context.Context, id string) (owner, addr string, err error) {
	owner, addr, ok, err := r.d.Leases.Holder(ctx, id)
	if err != nil {
		return "", "", err
	}
	if !ok || addr == "" {
		return "", "", fmt.Errorf("session %s: %w", id, errNoOwner)
	}
	return owner, addr, nil
}
