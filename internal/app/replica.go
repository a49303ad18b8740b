package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"harness/internal/auth"
	"harness/internal/driver"
	"harness/internal/driverstore"
	"harness/internal/metrics"
	"harness/internal/models"
	"harness/internal/replica"
	"harness/internal/service"
	"harness/internal/ws"
)

// A process touches no session before it holds its listener and its
// replica identity (docs/deploy.md "Replicas on PostgreSQL"): New opens
// the database (migrations are idempotent) and builds the parts, cmd/web
// listens (Listen), and only then does Start register the replica and let
// the manager resume sessions. A second process that cannot bind the port
// exits before it has written anything.

// setupLeases prepares this replica's leases on PostgreSQL. Nothing is
// written until Start registers the replica.
func (a *App) setupLeases() error {
	if a.DB.Driver != models.DriverPostgres {
		return nil
	}
	_, stale := a.Config.Replica.Beat()
	l, err := models.NewLeases(a.DB, a.Config.Replica.ID, a.Config.Replica.LeaseTTL, stale)
	if err != nil {
		return err
	}
	a.Leases = l
	a.meter = newReplicaMeter(a.Metrics)
	return nil
}

// driverLeases is the manager's view of the leases: nil on SQLite (an
// untyped nil, so the manager sees no leases at all).
func (a *App) driverLeases() driver.Leases {
	if a.Leases == nil {
		return nil
	}
	return meteredLeases{driverstore.Leases{L: a.Leases, S: a.Store}, a.meter}
}

// Listen binds the configured address and records the address this
// replica advertises (the port actually bound when Addr asks for any).
// cmd/web calls it before Start, so a taken port fails the start before
// any session is touched.
func (a *App) Listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", a.Config.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	a.advertise = a.Config.Advertised(ln.Addr())
	a.reserved.listening(ln.Addr())
	return ln, nil
}

// register writes this replica's row (PostgreSQL): its identity, before
// any session is touched.
func (a *App) register(ctx context.Context) error {
	if a.Leases == nil || a.registered {
		return nil
	}
	addr := a.advertise
	if addr == "" {
		addr = a.Config.Advertised(nil)
	}
	restarted, err := a.lockReplicaID()
	if err != nil {
		return err
	}
	if err := a.Leases.Register(ctx, addr, restarted); err != nil {
		return err
	}
	a.registered = true
	a.Log.Info("replica registered", "replica", a.Leases.ID(), "advertise", addr, "lease_ttl", a.Leases.TTL(), "stale_after", a.Leases.Stale())
	return nil
}

// unregister deletes this replica's row at shutdown, after the manager
// released its leases.
func (a *App) unregister(ctx context.Context) error {
	if !a.registered {
		return nil
	}
	// Within the shutdown's budget: a row left behind expires like a
	// crashed replica's.
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	a.registered = false
	return a.Leases.Unregister(ctx)
}

// onWriteError is the batched writer's report of a refused or failed
// write. A refusal under a stale lease epoch means another replica owns
// the session now: its agent here stops at once.
func (a *App) onWriteError(id string, err error) {
	if epoch, ok := driverstore.FencedEpoch(err); ok {
		a.Log.Warn("session append refused: the lease moved to another replica", "session", id, "err", err)
		if a.meter != nil {
			a.meter.m.Fenced()
		}
		if a.Manager != nil {
			a.Manager.LeaseLost(id, epoch)
		}
		return
	}
	a.Log.Error("session write failed", "session", id, "err", err)
}

// setupReplica builds this replica's part in the replica set (PostgreSQL):
// mirrors of sessions owned elsewhere, live notifications, forwarded
// commands and takeovers. Start starts it, after the replica registered.
func (a *App) setupReplica() {
	if a.Leases == nil {
		return
	}
	heartbeat, _ := a.Config.Replica.Beat()
	a.Replica = replica.New(replica.Deps{
		Log: a.Log, ID: a.Leases.ID(), Key: a.replicaKey,
		Bus: meteredBus{a.DB, a.meter}, Store: meteredStore{a.Store, a.meter}, Leases: a.Leases,
		Manager: takeovers{a.Manager, a.Service, a.Leases, a.meter}, TTL: a.Leases.TTL(), Heartbeat: heartbeat,
		ReloadSettings: a.reloadSettings,
		RemoteAccess:   a.Auth.PublishRemote,
	})
	// Access taken away here is cut on the other replicas' sockets too.
	// The subscription lasts as long as the process.
	a.Auth.SubscribeAccess(a.Replica.AccessChanged)
}

// takeovers settles a taken-over session's workspace too: a fork's copy
// its dead owner left preparing is failed by the replica that holds the
// lease now (docs/lifecycle.md "Workspaces after a crash"). It counts and
// times the takeovers: from the orphaned lease's expiry (the database's
// clock) to this replica holding the lease.
type takeovers struct {
	*driver.Manager
	svc    *service.Service
	leases *models.Leases
	meter  *replicaMeter
}

func (t takeovers) TakeOver(ctx context.Context, id string) error {
	lapsed, err := t.leases.Lapsed(ctx, id)
	if err != nil {
		return err
	}
	detected := time.Now()
	mark := &takeoverMark{}
	if err := t.Manager.TakeOver(context.WithValue(ctx, takeoverKey{}, mark), id); err != nil {
		return err
	}
	// Zero when the session was live here already, or a request's load
	// took the lease first.
	if !mark.acquired.IsZero() {
		t.meter.m.TakenOver(lapsed + mark.acquired.Sub(detected))
	}
	return t.svc.RepairTakenOver(ctx, id)
}

// settingsChanged returns what routes and MCP call after an admin's change:
// on PostgreSQL the other replicas are told to read kind again.
func (a *App) settingsChanged(kind string) func() {
	return func() {
		if a.Replica != nil {
			a.Replica.SettingsChanged(kind)
		}
	}
}

// reloadSettings reads settings another replica changed.
func (a *App) reloadSettings(ctx context.Context, kind string) error {
	switch kind {
	case replica.SettingsRoutes:
		return a.Routes.Load(ctx)
	case replica.SettingsMCP:
		return a.MCP.Load(ctx)
	}
	return nil
}

// serviceReplicas is the service's view of the replica set (nil on
// SQLite). The replica is built after the service (its takeovers repair
// through the service), and before any request is served.
func (a *App) serviceReplicas() service.Replicas {
	if a.Leases == nil {
		return nil
	}
	return lateReplica{a}
}

// lateReplica reads App.Replica when called.
type lateReplica struct{ a *App }

func (l lateReplica) RemoteOwner(ctx context.Context, id string) (string, string, bool, error) {
	return l.a.Replica.RemoteOwner(ctx, id)
}

func (l lateReplica) Statuses(ctx context.Context, ids []string) map[string]driver.Status {
	return l.a.Replica.Statuses(ctx, ids)
}

// wsRemote is the hub's view of the replica (nil on SQLite).
func (a *App) wsRemote() ws.Remote {
	if a.Replica == nil {
		return nil
	}
	return wsRemote{a.Replica, a.meter}
}

// wsRemote adapts the replica's concrete mirror to the hub's interface
// and counts the socket commands it forwards.
type wsRemote struct {
	r     *replica.Replica
	meter *replicaMeter
}

func (w wsRemote) Follow(ctx context.Context, id string) (ws.Followed, func(), error) {
	m, release, err := w.r.Follow(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	return m, release, nil
}

func (w wsRemote) Forward(ctx context.Context, id string, a *auth.Actor, req []byte) ([]byte, error) {
	out, err := w.r.Forward(ctx, id, a, req)
	outcome := metrics.ForwardOK
	if err != nil {
		outcome = metrics.ForwardFailed
	}
	w.meter.m.Forwarded(metrics.ForwardSocket, outcome)
	return out, err
}

// whileOwner is the web layer's check of a forwarded request's owner (nil
// on SQLite).
func (a *App) whileOwner() func(ctx context.Context, session, addr string) (context.Context, context.CancelFunc) {
	if a.Replica == nil {
		return nil
	}
	return a.Replica.WhileOwner
}

func (a *App) replicaID() string {
	if a.Leases == nil {
		return ""
	}
	return a.Leases.ID()
}

func (a *App) replicaHandler() http.Handler {
	if a.Replica == nil {
		return nil
	}
	return a.Replica.Handler()
}

// onCommit passes the writer's commits to the hub (replicas only).
func (a *App) onCommit(id string, head int64) {
	if h := a.storedTo.Load(); h != nil {
		h.Stored(id, head)
	}
}

// storedHead is the hub's reader of a session's stored head: set with
// replicas, whose subscribers get stored events only (ws.Deps.StoredHead).
func (a *App) storedHead() func(ctx context.Context, id string) (int64, error) {
	if a.Replica == nil {
		return nil
	}
	return func(ctx context.Context, id string) (int64, error) {
		row, err := a.Store.GetSession(ctx, id)
		if err != nil {
			return 0, err
		}
		return row.Head, nil
	}
}

// writerDelay is how long the batched writer lets events gather. On
// PostgreSQL every subscriber waits for the commit (replicas deliver
// stored events only), so batches are cut short; SQLite keeps the
// writer's default.
func writerDelay(db *models.DB) time.Duration {
	if db.Driver == models.DriverPostgres {
		return 2 * time.Millisecond
	}
	return 0
}
