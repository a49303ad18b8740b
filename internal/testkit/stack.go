package testkit

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"harness/internal/auth"
	"harness/internal/compact"
	"harness/internal/config"
	"harness/internal/driver"
	"harness/internal/driverstore"
	"harness/internal/egress"
	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/models"
	"harness/internal/sandbox"
	"harness/internal/sandbox/sandboxtest"
	"harness/internal/secrets"
	"harness/internal/service"
	"harness/internal/tools"
	"harness/internal/tools/builtin"
	"harness/internal/workspace"
)

// StackOptions choose what NewStack builds; the zero value is a fresh
// SQLite database, the test logger, no model route, the built-in tools run
// through the workspace manager, and no compaction.
type StackOptions struct {
	// Log receives every part's logs [Logger()].
	Log *slog.Logger
	// DB is a database to build on, closed by its owner (a test that made
	// accounts in it first); nil opens SQLite in the stack's directory.
	DB *models.DB
	// Auth is the accounts service; nil builds one on the database with the
	// cheapest bcrypt cost.
	Auth *auth.Service

	// Script, when set, starts the scripted fake model (FakeRoute with Route
	// and Fake) and makes its route the default. Stack.Fake is its server.
	Script *fake.Script
	Route  RouteOptions
	Fake   []fake.Option
	// Demo registers the offline demo model (tuned by DemoOptions), the
	// default when no other route is.
	Demo        bool
	DemoOptions []fake.Option
	// Providers are more model routes; without a Script the first is the
	// default.
	Providers []llm.Provider

	// Tools fills the tool registry; nil registers the built-in tools.
	Tools func(*tools.Registry)
	// Plain runs tools through plainConfiner (any directory is a
	// workspace, as in driver tests) instead of the workspace manager's
	// rules. The manager is built either way: the service needs it.
	Plain bool
	// Subagents offers the task tool (driver.Options.Children), as the
	// app does; off, requests carry the tool lists older tests measured.
	Subagents bool
	// WorkspaceRoots are the configured workspace roots (Source "config");
	// GitHosts the configured clone hosts. Settings may add to both, as in
	// the app.
	WorkspaceRoots []workspace.Root
	GitHosts       []string
	// FetchHosts is web_fetch's configured allow-list; Settings may add to
	// it, as in the app.
	FetchHosts []string
	// ForkCopyMax caps what a fork copies [config.DefaultForkCopyMax];
	// negative means forks never copy.
	ForkCopyMax int64

	// AttachmentMax caps one uploaded image [service.DefaultAttachmentMax].
	AttachmentMax int64

	// VerifyRequests makes every model request prove it equals the log.
	VerifyRequests bool
	// Manager adjusts the manager's options (after the stack filled them).
	Manager func(*driver.Options)
	// Store wraps the manager's store (driverstore over the real one), at
	// every start.
	Store func(driver.Store) driver.Store
	// Compaction, when set, installs compaction on every manager (with
	// compact.OnLoad) and gives the service the same options. A nil Meter,
	// Logger or Providers is filled with a new meter, Log and the stack's
	// registry; Stack.Compaction holds the result.
	Compaction *compact.Options
}

// Stack is the server's parts without HTTP, wired as the app wires them:
// the store with its batched writer, accounts, settings, the sandbox and
// the workspace manager, the model routes, the tools, the agent manager and
// the service. NewStack closes all of it in t.Cleanup; parts a test builds
// on top (a ws.Hub) register their cleanup later, so they stop first.
type Stack struct {
	t    testing.TB
	opts StackOptions

	// Dir is the data directory: the database (unless given), fresh
	// workspaces and scratch directories.
	Dir        string
	Log        *slog.Logger
	DB         *models.DB
	Writer     *models.Writer
	Store      *models.Store
	Auth       *auth.Service
	Settings   *models.SettingsStore
	Sandbox    *sandbox.Sandbox
	Workspaces *workspace.Manager
	Providers  *llm.Registry
	Tools      *tools.Registry
	// Fake is the scripted model's server (nil without Options.Script).
	Fake *fake.Server
	// Compaction are the options installed on the manager and given to the
	// service (zero without Options.Compaction).
	Compaction compact.Options
	// Manager and Service are replaced by Restart.
	Manager *driver.Manager
	Service *service.Service

	stopped bool
}

// NewStack builds the stack o describes; a failure fails t.
func NewStack(t testing.TB, o StackOptions) *Stack {
	t.Helper()
	s := &Stack{t: t, opts: o, Dir: t.TempDir(), Log: o.Log}
	if s.Log == nil {
		s.Log = Logger()
	}
	s.Store = openStore(t, s.Log, s.Dir, o.DB)
	s.DB, s.Writer = s.Store.DB, s.Store.W
	s.Auth = o.Auth
	if s.Auth == nil {
		s.Auth = auth.NewService(s.Log, models.NewAuthStore(s.DB), auth.Options{BcryptCost: bcrypt.MinCost})
	}
	// The key is the test's own: settings seal route keys as the app's do.
	sealer, err := secrets.NewSealer(secrets.NewKey())
	if err != nil {
		t.Fatalf("sealer: %v", err)
	}
	s.Settings = models.NewSettingsStore(s.DB, sealer)
	s.Sandbox = sandboxtest.Shared(t)
	s.buildWorkspaces()
	s.buildProviders()
	s.Tools = tools.NewRegistry()
	if o.Tools != nil {
		o.Tools(s.Tools)
	} else if err := builtin.Register(s.Tools, builtin.Options{WebFetch: builtin.WebFetchOptions{Hosts: s.Workspaces.AllFetchHosts}}); err != nil {
		t.Fatalf("tools: %v", err)
	}
	if o.Compaction != nil {
		s.Compaction = *o.Compaction
		if s.Compaction.Meter == nil {
			s.Compaction.Meter = compact.NewMeter()
		}
		if s.Compaction.Logger == nil {
			s.Compaction.Logger = s.Log
		}
		if s.Compaction.Providers == nil {
			s.Compaction.Providers = s.Providers
		}
	}
	s.start()
	// Registered after the store's cleanup, so it runs before it: agents
	// stop (and flush) while the writer still takes their events.
	t.Cleanup(s.Shutdown)
	return s
}

// buildWorkspaces builds the workspace manager as the app does: roots and
// clone hosts from the options and from Settings, the network from the
// session and its model route.
func (s *Stack) buildWorkspaces() {
	s.t.Helper()
	fork := s.opts.ForkCopyMax
	switch {
	case fork == 0:
		fork = config.DefaultForkCopyMax
	case fork < 0:
		fork = 0
	}
	proxy, err := egress.NewProxy(egress.ProxyDeps{Log: s.Log, Dir: filepath.Join(s.Dir, "egress"), Hosts: s.fetchHosts})
	if err != nil {
		s.t.Fatalf("egress: %v", err)
	}
	s.t.Cleanup(proxy.Close)
	wsm, err := workspace.New(workspace.Deps{
		Log: s.Log, Sandbox: s.Sandbox, DataDir: s.Dir, Egress: proxy,
		Roots:       s.workspaceRoots,
		GitHosts:    s.gitHosts,
		InUse:       s.Store.WorkspaceInUse,
		Network:     s.sessionNetwork,
		FetchHosts:  s.fetchHosts,
		ForkCopyMax: fork,
	})
	if err != nil {
		s.t.Fatalf("workspaces: %v", err)
	}
	s.Workspaces = wsm
}

func (s *Stack) workspaceRoots(ctx context.Context) ([]workspace.Root, error) {
	out := slices.Clone(s.opts.WorkspaceRoots)
	for i := range out {
		out[i].Source = "config"
	}
	stored, err := s.Settings.WorkspaceRoots(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range stored {
		out = append(out, workspace.Root{Path: r.Path, Users: r.Users, Shared: r.Shared, Source: "settings"})
	}
	return out, nil
}

// fetchHosts is web_fetch's allow-list: the options', then Settings'.
func (s *Stack) fetchHosts(ctx context.Context) ([]string, error) {
	stored, err := s.Settings.FetchHosts(ctx)
	if err != nil {
		return nil, err
	}
	return append(slices.Clone(s.opts.FetchHosts), stored...), nil
}

func (s *Stack) gitHosts(ctx context.Context) ([]string, error) {
	stored, err := s.Settings.GitHosts(ctx)
	if err != nil {
		return nil, err
	}
	return append(slices.Clone(s.opts.GitHosts), stored...), nil
}

// sessionNetwork is the app's rule: an admin allowed the network for the
// session, or for the model route it now uses; errors read as "no".
func (s *Stack) sessionNetwork(ctx context.Context, id string) bool {
	row, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return false
	}
	if row.Network {
		return true
	}
	provider := row.Provider
	if ag, ok := s.Manager.Lookup(id); ok {
		if sel := ag.Log().State().Model; sel != nil {
			provider = sel.Provider
		}
	}
	routes, err := s.Settings.RouteNetwork(ctx)
	return err == nil && routes[provider]
}

// buildProviders registers the demo model, the scripted one and the extra
// routes, and sets the default: the script's, else the first extra, else
// the demo.
func (s *Stack) buildProviders() {
	t := s.t
	t.Helper()
	s.Providers = llm.NewRegistry()
	var def *llm.ProviderInfo
	register := func(p llm.Provider, isDefault bool) {
		if err := s.Providers.Register(p); err != nil {
			t.Fatalf("register %s: %v", p.Info().Name, err)
		}
		if info := p.Info(); isDefault {
			def = &info
		}
	}
	if s.opts.Demo {
		demo, stop, err := fake.StartDemo(t.Context(), s.Log, s.opts.DemoOptions...)
		if err != nil {
			t.Fatalf("start the demo model: %v", err)
		}
		t.Cleanup(stop)
		register(demo, true)
	}
	for i, p := range s.opts.Providers {
		register(p, i == 0 && s.opts.Script == nil)
	}
	if s.opts.Script != nil {
		var p llm.Provider
		s.Fake, p = FakeRoute(t, *s.opts.Script, s.opts.Route, s.opts.Fake...)
		register(p, true)
	}
	if def != nil {
		s.Providers.SetDefault(def.Name, def.DefaultModel)
	}
}

// start builds a manager (compaction installed when asked) and a service
// over it.
func (s *Stack) start() {
	mopts := driver.Options{Providers: s.Providers, Tools: s.Tools, VerifyRequests: s.opts.VerifyRequests, Confiner: s.Workspaces, Network: s.Workspaces.Network,
		Attachments: driverstore.Store{S: s.Store},
		// As the app wires it; the service is made below.
		WorkspaceGate: func(ctx context.Context, id string) string { return s.Service.WorkspaceGate(ctx, id) },
		Caps:          s.Workspaces.CapsHook}
	if s.opts.Subagents {
		mopts.Children = driverstore.Store{S: s.Store}
	}
	if s.opts.Plain {
		mopts.Confiner = plainConfiner{sandbox: s.Sandbox}
	}
	if s.opts.Compaction != nil {
		mopts.OnLoad = compact.OnLoad
	}
	if s.opts.Manager != nil {
		s.opts.Manager(&mopts)
	}
	var st driver.Store = driverstore.Store{S: s.Store}
	if s.opts.Store != nil {
		st = s.opts.Store(st)
	}
	s.Manager = driver.NewManager(s.Log, st, mopts)
	if s.opts.Compaction != nil {
		compact.Install(s.Manager, s.Compaction)
	}
	s.Service = service.New(service.Deps{
		Log: s.Log, Store: s.Store, Manager: s.Manager, Meta: driverstore.Store{S: s.Store},
		Auth: s.Auth, Workspaces: s.Workspaces, Settings: s.Settings, Compaction: s.Compaction,
		AttachmentMax: s.opts.AttachmentMax,
	})
	s.stopped = false
}

// Shutdown stops the service's background work and the manager gracefully,
// as a server stop does (running turns end aborted, queued input stays
// stored); it fails t if the manager takes over 10 s. It is idempotent
// until Restart, and runs in t.Cleanup.
func (s *Stack) Shutdown() {
	if s.stopped {
		return
	}
	s.stopped = true
	s.Service.Close()
	ShutdownManager(s.t, s.Manager)
}

// Restart shuts the manager down and starts a new one (and a new service)
// on the same store with the same options, as a server restart does:
// agents load again lazily. Subscriptions to the old manager are gone.
func (s *Stack) Restart() {
	s.t.Helper()
	s.Shutdown()
	s.start()
}

// PlainWorkspace makes a directory for a session of a Plain stack, owned
// by the tools' user as the server makes workspaces.
func (s *Stack) PlainWorkspace() string {
	s.t.Helper()
	dir, err := os.MkdirTemp(s.Dir, "ws-")
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.Sandbox.Own(dir); err != nil {
		s.t.Fatal(err)
	}
	return dir
}

// CreateAgent stores row and starts its agent; empty Provider and Model
// take the default route.
func (s *Stack) CreateAgent(row *models.Session) *driver.Agent {
	s.t.Helper()
	if row.Provider == "" {
		row.Provider, row.Model = s.Providers.Default()
	}
	if err := s.Store.CreateSession(s.t.Context(), row); err != nil {
		s.t.Fatalf("store session %s: %v", row.ID, err)
	}
	a, err := s.Manager.Create(s.t.Context(), driverstore.MetaOf(row))
	if err != nil {
		s.t.Fatalf("start session %s: %v", row.ID, err)
	}
	return a
}

// Actor creates an account named name (password name+"-password") and
// returns the actor its API token authenticates as.
func (s *Stack) Actor(name string, admin bool) *auth.Actor {
	s.t.Helper()
	ctx := s.t.Context()
	if _, err := s.Auth.CreateUser(ctx, name, name+"-password", admin); err != nil {
		s.t.Fatalf("create user %s: %v", name, err)
	}
	tok, err := s.Auth.CreateToken(ctx, name, "test")
	if err != nil {
		s.t.Fatalf("token for %s: %v", name, err)
	}
	a, err := s.Auth.TokenActor(ctx, tok)
	if err != nil {
		s.t.Fatalf("actor of %s: %v", name, err)
	}
	return a
}

// WorkspaceRoot is the directory holding fresh workspaces (one per
// session), as App.WorkspaceRoot.
func (s *Stack) WorkspaceRoot() string { return s.Workspaces.FreshRoot() }

// WaitIdle waits for a session's agent to go idle; a session that is not
// loaded is idle.
func (s *Stack) WaitIdle(t testing.TB, id string) {
	t.Helper()
	ag, ok := s.Manager.Lookup(id)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := ag.Wait(ctx); err != nil {
		t.Fatalf("session %s did not go idle: %v", id, err)
	}
}
