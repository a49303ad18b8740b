// Package app wires Harness together from its configuration: database,
// batched writer, store, accounts, model routes (the offline demo model
// always), tools, the agent manager and the web server. cmd/web runs it; tests
// and the load tool start it in-process.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"harness/internal/auth"
	"harness/internal/compact"
	"harness/internal/config"
	"harness/internal/driver"
	"harness/internal/driverstore"
	"harness/internal/egress"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/mcp"
	"harness/internal/metrics"
	"harness/internal/models"
	"harness/internal/render"
	"harness/internal/replica"
	"harness/internal/routes"
	"harness/internal/sandbox"
	"harness/internal/service"
	"harness/internal/session"
	"harness/internal/tools"
	"harness/internal/tools/builtin"
	"harness/internal/web"
	"harness/internal/workspace"
	"harness/internal/ws"
)

// Options adjust an App beyond its Config (tests, the load tool).
type Options struct {
	// Getenv reads provider settings (DEEPSEEK_API_KEY, OPENAI_*); nil means
	// os.Getenv.
	Getenv func(string) string
	// Providers are extra model routes registered after the built-in ones;
	// the first becomes the default.
	Providers []llm.Provider
	// DemoOptions tune the embedded demo model (pacing).
	DemoOptions []fake.Option
	// VerifyRequests makes every model request prove it equals the log.
	VerifyRequests bool
	// AuthOptions override account defaults (bcrypt cost, clocks in tests).
	AuthOptions *auth.Options
	// WS tunes the WebSocket hub (queue sizes, keepalive) for tests and the
	// load tool.
	WS ws.Options
	// Projections makes the live projections that render events to HTML
	// for browser subscriptions; nil uses the transcript's
	// (render.NewProjection).
	Projections ws.Projections
	// Sandbox replaces the sandbox New would probe (tests of a machine
	// without one).
	Sandbox *sandbox.Sandbox
}

// App is a running Harness instance.
type App struct {
	Config    config.Config
	Log       *slog.Logger
	DB        *models.DB
	Writer    *models.Writer
	Store     *models.Store
	Auth      *auth.Service
	Providers *llm.Registry
	Tools     *tools.Registry
	Manager   *driver.Manager
	Service   *service.Service
	Hub       *ws.Hub
	Metrics   *metrics.Metrics
	// Markdown renders model text for the pages' folds and the live
	// projections.
	Markdown *render.Markdown
	// Routes loads the environment's and the admin's model routes into
	// Providers and applies the admin's changes; it keeps users'
	// preferences too.
	Routes *routes.Routes
	// Settings are the admin's stored settings (routes, roots, hosts).
	Settings *models.SettingsStore
	// Sandbox confines tool processes; Workspaces places sessions' files.
	Sandbox    *sandbox.Sandbox
	Workspaces *workspace.Manager
	// Egress is the network-on sandboxes' only way out (egress.go).
	Egress *egress.Proxy
	Web    *web.Server
	// Leases are this replica's identity and session leases on PostgreSQL
	// (replica.go); nil on SQLite, whose one process owns every session.
	Leases *models.Leases
	// Replica serves the sessions other replicas own (PostgreSQL): nil on
	// SQLite.
	Replica *replica.Replica
	// meter feeds the replica series of /metrics (replica_metrics.go);
	// nil on SQLite.
	meter *replicaMeter

	// MCP connects sessions to the configured MCP servers (mcp.go).
	MCP *mcp.Manager

	// reserved are this server's own addresses, which web_fetch never
	// reaches (webfetch.go).
	reserved reserved

	// projections make the live views the hub pushes (ws.Deps).
	projections ws.Projections

	stopDemo   func()
	ownSandbox bool // New made the sandbox: Close removes its cgroups
	closeOnce  sync.Once
	closeErr   error
	advertise  string   // the address registered for this replica (Listen)
	registered bool     // the replicas row is written (Start)
	idLock     *os.File // holds this replica id's lock file (replica_lock.go)
	draining   atomic.Bool
	replicaKey []byte // signs the requests between replicas (derived from the secret key)
	// storedTo is told the writer's commits (replicas: subscribers get
	// stored events only); set once the hub exists.
	storedTo atomic.Pointer[ws.Hub]
}

// New opens the database and builds every part. Call Start to resume queued
// work and Close to shut down.
func New(ctx context.Context, log *slog.Logger, cfg config.Config, opts Options) (*App, error) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	cfg.Replica = cfg.Replica.WithDefaults(cfg.DataDir, cfg.Addr)
	a := &App{Config: cfg, Log: log}
	ok := false
	defer func() {
		if !ok {
			a.closeParts(context.Background())
		}
	}()

	// The data directory holds the database and the secret key (0600
	// files): others may traverse it, never list it, so a sandboxed tool
	// without bubblewrap can still reach its own workspace by its path.
	if err := os.MkdirAll(cfg.DataDir, 0o711); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", cfg.DataDir, err)
	}
	// A transaction left idle by a paused replica ends by the time its
	// heartbeat is stale, so a takeover never waits on its row locks.
	_, stale := cfg.Replica.Beat()
	db, err := models.Open(ctx, log, models.Config{Driver: cfg.DBDriver, DSN: cfg.DBDSN, IdleTxTimeout: stale})
	if err != nil {
		return nil, err
	}
	a.DB = db
	// Gauges are read at scrape time, when every part exists.
	a.Metrics = metrics.New(metrics.Sources{
		LiveSessions:    func() int { return a.Manager.Loaded() },
		RunningSessions: func() int { return a.Manager.Running() },
		WSConnections:   func() int { return a.Hub.Stats().Conns },
		WSCuts:          func() uint64 { return a.Hub.Stats().SlowClosed },
		WSFrames:        func() uint64 { return a.Hub.Stats().FramesOut },
		WSWrites:        func() uint64 { return a.Hub.Stats().WritesOut },
		WriterPending:   func() int { return a.Writer.Stats().Pending },
		ImportsRunning:  func() int { return a.Service.ImportsRunning() },
	})
	a.Writer = models.NewWriter(log, db, models.WriterOptions{
		OnError:  a.onWriteError,
		OnBatch:  a.Metrics.OnBatch,
		OnCommit: a.onCommit,
		MaxDelay: writerDelay(db),
	})
	a.Store = models.NewStore(log, db, a.Writer)
	if err := a.setupLeases(); err != nil {
		return nil, err
	}

	authOpts := auth.Options{}
	if opts.AuthOptions != nil {
		authOpts = *opts.AuthOptions
	}
	a.Auth = auth.NewService(log, models.NewAuthStore(db), authOpts)
	settings, err := a.settingsStore(ctx, opts.Getenv)
	if err != nil {
		return nil, err
	}
	a.Settings = settings
	if err := a.setupWorkspaces(ctx, opts.Sandbox); err != nil {
		return nil, err
	}

	if err := a.setupProviders(ctx, opts); err != nil {
		return nil, err
	}
	a.Tools = tools.NewRegistry()
	fetch, err := a.webFetchOptions(ctx)
	if err != nil {
		return nil, err
	}
	if err := builtin.Register(a.Tools, builtin.Options{WebFetch: fetch}); err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	if err := a.setupMCP(ctx, opts.Getenv); err != nil {
		return nil, err
	}
	a.Manager = driver.NewManager(log, driverstore.Store{S: a.Store}, driver.Options{
		Providers:      a.Providers,
		Tools:          a.Tools,
		IdleUnload:     cfg.IdleUnload,
		VerifyRequests: opts.VerifyRequests,
		OnLoad:         compact.OnLoad,
		Observer:       a.Metrics.Observer(),
		Confiner:       a.Workspaces,
		SessionTools:   a.sessionTools(),
		Network:        a.Workspaces.Network,
		// The service is made below; tools run only after it is.
		WorkspaceGate: func(ctx context.Context, id string) string { return a.Service.WorkspaceGate(ctx, id) },
		Caps:          a.Workspaces.CapsHook,
		Attachments:   driverstore.Store{S: a.Store},
		Leases:        a.driverLeases(),
		LeaseTTL:      cfg.Replica.LeaseTTL,
		Heartbeat:     cfg.Replica.Heartbeat,
		StaleAfter:    cfg.Replica.StaleAfter,
		Children:      driverstore.Store{S: a.Store},
		// A fork's copy a dead replica left preparing is failed by the
		// next holder of its lease (docs/lifecycle.md "Workspaces after a
		// crash"); loads happen only once the service exists.
		Leased: func(ctx context.Context, id string) {
			if err := a.Service.RepairTakenOver(ctx, id); err != nil {
				log.Error("repair a session whose lease was taken", "session", id, "err", err)
			}
		},
	})
	// One meter for the automatic triggers, the service and the renderer,
	// so they share its incremental folds.
	copts := compact.Options{Logger: log, Meter: compact.NewMeter()}
	compact.Install(a.Manager, copts)
	a.Service = service.New(service.Deps{
		Log: log, Store: a.Store, Manager: a.Manager, Meta: driverstore.Store{S: a.Store}, Auth: a.Auth, Workspaces: a.Workspaces, Settings: a.Settings,
		Compaction: copts, AttachmentMax: cfg.AttachmentMax, Replicas: a.serviceReplicas(),
	})
	a.Markdown = render.NewMarkdown()
	// One book of session figures for the pages and the live footers, so
	// each session's log is folded for them once.
	figures := render.NewFigureBook(0)
	a.projections = opts.Projections
	if a.projections == nil {
		md := a.Markdown
		// Nothing here reads the store: a fragment is a function of the
		// events (docs/architecture.md), so a slow database never stalls
		// a session's viewers.
		a.projections = func(id string, l *session.Log, upto int64) ws.Projector {
			return render.NewProjection(md, id, l, upto, render.ProjectionOptions{
				Meter:   true,
				Figures: func(seq int64) (render.SessionFigures, bool) { return a.liveFigures(figures, id, l, seq) },
				// The header's model label, named as the page names it.
				ModelLabel: func(provider, model string) (string, bool) {
					info, ok := a.Routes.Lookup(provider)
					return render.RouteLabel(info, ok, provider, model)
				},
			})
		}
	}
	a.setupReplica()
	a.Hub = ws.New(ws.Deps{Log: log, Service: a.Service, Manager: a.Manager, Projections: a.projections, Access: a.Auth,
		Remote: a.wsRemote(), TakeoverWait: cfg.Replica.LeaseTTL, StoredHead: a.storedHead(), Options: wsOptions(opts.WS, cfg.ClientLimits)})
	if a.Replica != nil {
		a.Replica.SetExecutor(a.Hub.ExecuteForwarded)
		a.storedTo.Store(a.Hub)
	}
	a.Web = web.New(web.Deps{
		Log:            log,
		DB:             a.Store,
		Auth:           a.Auth,
		TrustedOrigins: cfg.TrustedOrigins,
		TrustedProxies: cfg.TrustedProxies,
		Service:        a.Service,
		WS:             a.Hub,
		ReplicaID:      a.replicaID(),
		TakeoverWait:   cfg.Replica.LeaseTTL,
		WhileOwner:     a.whileOwner(),
		Replicas:       a.replicaHandler(),
		UI:             &web.UIDeps{Store: a.Store, Markdown: a.Markdown, Routes: a.Routes, Figures: figures, MCP: a.MCP},
		Metrics:        a.Metrics.Handler(),
		MetricsToken:   cfg.MetricsToken,
		Forwards:       a.webForwards(),
		Draining:       a.Draining,
	})
	ok = true
	return a, nil
}

// setupProviders registers the offline demo model, the environment's routes,
// the extra ones of Options and, last, the admin's stored routes (which
// never shadow the others). The default is DeepSeek when its key is set,
// else an OpenAI-compatible route, else the demo; the first of
// Options.Providers beats them, and a stored default beats all.
func (a *App) setupProviders(ctx context.Context, opts Options) error {
	a.Providers = llm.NewRegistry()
	// The demo model listens in this process: tools never reach it.
	demoOpts := append(slices.Clone(opts.DemoOptions), fake.OnListen(a.reserved.listening))
	demo, stop, err := fake.StartDemo(ctx, a.Log, demoOpts...)
	if err != nil {
		return fmt.Errorf("start the offline demo model: %w", err)
	}
	a.stopDemo = stop
	if err := a.Providers.Register(demo); err != nil {
		return err
	}
	def := demo.Info()
	a.Routes = routes.New(routes.Deps{Log: a.Log, Registry: a.Providers, Store: a.Settings, OnChange: a.settingsChanged(replica.SettingsRoutes)})
	fromEnv, err := a.Routes.LoadEnv(opts.Getenv)
	if err != nil {
		return err
	}
	if len(fromEnv) > 0 {
		def = fromEnv[0]
	}
	for i, p := range opts.Providers {
		if err := a.Providers.Register(p); err != nil {
			return err
		}
		if i == 0 {
			def = p.Info()
		}
	}
	a.Providers.SetDefault(def.Name, def.DefaultModel)
	if err := a.Routes.Load(ctx); err != nil {
		return err
	}
	p, m := a.Providers.Default()
	a.Log.Info("model routes ready", "default", p, "model", m, "offline", p == demo.Info().Name)
	return nil
}

// liveFigures are a session's figures as of the turn/end at seq, for
// the live footer, folded from its log (in memory: no I/O).
func (a *App) liveFigures(book *render.FigureBook, id string, l *session.Log, seq int64) (render.SessionFigures, bool) {
	f, err := book.At(context.Background(), id, seq, render.LogReader(l))
	if err != nil {
		a.Log.Warn("session figures", "session", id, "seq", seq, "err", err)
		return f, false
	}
	return f, true
}

// wsOptions are the hub's options: those the caller set, then the
// configured client limits.
func wsOptions(o ws.Options, l config.ClientLimits) ws.Options {
	if o.MaxSockets == 0 {
		o.MaxSockets = l.WSMaxSockets
	}
	if o.CommandRate == 0 {
		o.CommandRate = l.WSCommandRate
	}
	if o.CommandBurst == 0 {
		o.CommandBurst = l.WSCommandBurst
	}
	return o
}

// WorkspaceRoot is the directory holding fresh workspaces (one per
// session).
func (a *App) WorkspaceRoot() string { return filepath.Join(a.Config.DataDir, "workspaces") }

// Handler serves every route.
func (a *App) Handler() http.Handler { return a.Web.Handler() }

// Close closes the WebSockets (1001, going away), stops agents (their
// queues survive for the next start), drains the writer and closes the
// database, all within ctx: what has not finished when ctx ends is
// abandoned and named in the error (docs/lifecycle.md "Shutdown"). Later
// calls return the first call's result.
func (a *App) Close(ctx context.Context) error {
	a.closeOnce.Do(func() { a.closeErr = a.close(ctx) })
	return a.closeErr
}

func (a *App) close(ctx context.Context) error {
	var errs []error
	if a.Hub != nil {
		errs = append(errs, a.Hub.Close(ctx))
	}
	if a.Replica != nil {
		errs = append(errs, within(ctx, "stopping the replica's loops", noErr(a.Replica.Close)))
	}
	if a.Service != nil {
		// Background clones stop; they resume at the next start.
		errs = append(errs, within(ctx, "stopping workspace clones", noErr(a.Service.Close)))
	}
	if a.meter != nil {
		a.meter.closing.Store(true)
	}
	if a.Manager != nil {
		errs = append(errs, a.Manager.Shutdown(ctx))
	}
	if a.MCP != nil {
		// Sets of agents that never reached the manager.
		errs = append(errs, within(ctx, "closing MCP connections", noErr(a.MCP.Close)))
	}
	if a.ownSandbox {
		// Tools' processes may still be leaving; what stays is removed
		// at the next start.
		if err := a.Sandbox.Close(); err != nil {
			a.Log.Warn("remove the session cgroups", "err", err)
		}
	}
	errs = append(errs, a.unregister(ctx))
	if a.idLock != nil {
		// After the row is gone: another process of this id may start.
		errs = append(errs, a.idLock.Close())
	}
	errs = append(errs, a.closeParts(ctx))
	return errors.Join(errs...)
}

func (a *App) closeParts(ctx context.Context) error {
	var errs []error
	if a.Writer != nil {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		errs = append(errs, a.Writer.Close(wctx))
		cancel()
	}
	if a.DB != nil {
		// Not closing is a crash to SQLite, which it recovers from.
		errs = append(errs, within(ctx, "closing the database", a.DB.Close))
	}
	if a.stopDemo != nil {
		errs = append(errs, within(ctx, "stopping the offline demo model", noErr(a.stopDemo)))
	}
	if a.Egress != nil {
		a.Egress.Close()
	}
	return errors.Join(errs...)
}

// within runs fn and waits for it until ctx ends; then fn is abandoned (it
// goes on, and the process exits without it) and the error says what.
func within(ctx context.Context, what string, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("shutdown did not wait for %s: %w", what, context.Cause(ctx))
	}
}

// noErr adapts a close that reports nothing to within.
func noErr(fn func()) func() error {
	return func() error { fn(); return nil }
}
