package driver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"harness/internal/llm"
	"harness/internal/session"
	"harness/internal/tools"
)

// Store is what the driver needs from persistence. models.Store implements
// it through a small adapter in the wiring.
type Store interface {
	// SessionMeta returns the stored metadata of a session.
	SessionMeta(ctx context.Context, id string) (Meta, error)
	// LoadLog loads a stored log with crash repair applied once; appends to
	// the returned log are persisted.
	LoadLog(ctx context.Context, id string, clock func() int64) (*session.Log, error)
	// Enqueue persists an appended event (the Log sink): cheap, never blocks.
	Enqueue(id string, ev session.Event)
	// Flush returns once every event enqueued for id is durable.
	Flush(ctx context.Context, id string) error
	// SetPendingInbox records how many queue items wait, so a restart can
	// find and run them.
	SetPendingInbox(ctx context.Context, id string, n int) error
	// PendingInboxSessions lists sessions with waiting queue items.
	PendingInboxSessions(ctx context.Context) ([]string, error)
}

// Meta is a session's metadata as the driver needs it.
type Meta struct {
	ID        string
	Workspace string
	Provider  string
	Model     string
	Header    session.Header
	// Subagent marks a subagent's child session; Parent is its parent,
	// whose sandbox and network policy its tools use.
	Subagent bool
	Parent   string
}

// Options tune a Manager.
type Options struct {
	MaxParallelTools int           // rolling tool pool per step; default 10
	IdleUnload       time.Duration // unload idle, unpinned agents after this; 0 = never
	// VerifyRequests re-derives every request from a fresh load of the log
	// and fails the turn on any difference (tests run with it on).
	VerifyRequests bool
	Clock          func() int64    // epoch ms; default time.Now
	Tools          *tools.Registry // global tool definitions; default empty
	Providers      *llm.Registry   // model routes (required)
	// OnLoad runs on every cold-loaded log after crash repair, before the
	// agent is published (e.g. compaction closes a dead bracket with an
	// end-seed marker).
	OnLoad func(l *session.Log) error
	// Observer receives metrics events; nil means none.
	Observer Observer
	// Confiner builds the commands tool processes run in (the sandbox);
	// nil refuses every tool process.
	Confiner Confiner
	// SessionTools supplies each session's own tools (MCP servers'); nil:
	// none.
	SessionTools SessionTools
	// Attachments reads the bytes of the images a session's messages refer
	// to, for the model requests (llm.Request.Attachments); nil: requests
	// carry none.
	Attachments llm.AttachmentReader
	// Network reports whether a session's network policy lets its tools
	// reach the network (web_fetch asks it); nil: never.
	Network func(ctx context.Context, sessionID string) bool
	// WorkspaceGate says why a session's workspace cannot be used by its
	// tools now ("" when it can): being prepared, or a fork's copy a crash
	// cut short. A step's tool bodies are refused with
	// CodeWorkspaceNotReady then. nil: always usable.
	WorkspaceGate func(ctx context.Context, sessionID string) (reason string)
	// Caps wraps every tool body of a session with its resource caps (the
	// workspace quota, the memory cap's kills), given the session whose
	// sandbox it uses (a subagent's parent) and the workspace. nil: none.
	Caps func(sessionID, workspace string) tools.ExecuteHook
	// NoApprovals says no approval service exists (nobody can answer, e.g.
	// an unattended runner): a call that asks is denied as unavailable and
	// no approval/* event is logged.
	NoApprovals bool
	// Leases make this manager one replica of several (PostgreSQL): it runs
	// a session's agent only under the session's lease (lease.go). nil: it
	// owns every session (SQLite, one process).
	Leases Leases
	// LeaseTTL is how long a lease lasts without renewal (default
	// DefaultLeaseTTL).
	LeaseTTL time.Duration
	// Heartbeat is how often the held leases and the replica's heartbeat
	// are renewed (default, and at most, a third of LeaseTTL).
	Heartbeat time.Duration
	// StaleAfter is how old its last renewal may be before another
	// replica may take its sessions (default, and at most, LeaseTTL): an
	// agent whose leases could not be renewed for that long stops.
	StaleAfter time.Duration
	// Leased runs, with Leases, after a cold load installed a session's
	// agent under a lease this manager just took, before Get returns to
	// the caller that loaded it (and before the waiting queue, which Get
	// then runs unless paused): what a dead holder left unsettled is
	// settled by whichever replica takes the lease next, however it was
	// taken (a takeover, or any request that loads the session once the
	// dead holder's lease lapsed). It may call Get for id. nil: nothing.
	Leased func(ctx context.Context, id string)
	// Children stores subagents' sessions; set, every agent but a
	// subagent is offered the task tool (subagent.go). nil: no subagents.
	Children ChildSessions
}

// Confiner confines the processes a session's tools start to that
// session's sandbox (workspace, private temporary directory, network
// policy, limits).
type Confiner interface {
	Command(ctx context.Context, sessionID, workspace string, p tools.Process) (*exec.Cmd, error)
}

// Manager owns the live agents of a process.
type Manager struct {
	logger    *slog.Logger
	store     Store
	providers *llm.Registry
	tools     *tools.Registry
	hooks     *Hooks
	opts      Options
	live      bus
	clock     func() int64
	rand      func() float64
	baseCtx   context.Context // root of every turn's context and of housekeeping
	// abandon cancels baseCtx when Shutdown's budget is spent, so every
	// flush and statement still waiting gives up.
	abandon context.CancelCauseFunc

	mu      sync.Mutex
	agents  map[string]*Agent
	loading map[string]*loadCall
	// stopping are agents stopped because their lease was lost, until a
	// new load of the session has seen them idle.
	stopping map[string]*Agent
	closed   bool
	// draining: no turn starts any more (Drain); input is still taken
	// and stays queued for the session's next owner.
	draining atomic.Bool

	pendMu    sync.Mutex
	pendDirty map[string]int
	pendKick  chan struct{}

	stop chan struct{}
	wg   sync.WaitGroup
}

type loadCall struct {
	done  chan struct{}
	agent *Agent
	err   error
}

// NewManager builds a manager and starts its background housekeeping.
func NewManager(logger *slog.Logger, store Store, opts Options) *Manager {
	if opts.MaxParallelTools <= 0 {
		opts.MaxParallelTools = 10
	}
	if opts.Clock == nil {
		opts.Clock = func() int64 { return time.Now().UnixMilli() }
	}
	if opts.Tools == nil {
		opts.Tools = tools.NewRegistry()
	}
	if opts.Providers == nil {
		opts.Providers = llm.NewRegistry()
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = DefaultLeaseTTL
	}
	if opts.Heartbeat <= 0 || opts.Heartbeat > opts.LeaseTTL/3 {
		opts.Heartbeat = opts.LeaseTTL / 3
	}
	if opts.StaleAfter <= 0 || opts.StaleAfter > opts.LeaseTTL {
		opts.StaleAfter = opts.LeaseTTL
	}
	if opts.Children != nil {
		// One definition serves every manager of the registry: the body
		// finds its agent through the call.
		if err := opts.Tools.Register(taskDefinition()); err != nil && !errors.Is(err, tools.ErrDuplicate) {
			panic(fmt.Sprintf("driver: register the task tool: %v", err))
		}
	}
	base, abandon := context.WithCancelCause(context.Background())
	m := &Manager{
		abandon:   abandon,
		logger:    logger,
		store:     store,
		providers: opts.Providers,
		tools:     opts.Tools,
		hooks:     &Hooks{},
		opts:      opts,
		clock:     opts.Clock,
		rand:      rand.Float64,
		baseCtx:   base,
		agents:    map[string]*Agent{},
		loading:   map[string]*loadCall{},
		stopping:  map[string]*Agent{},
		pendDirty: map[string]int{},
		pendKick:  make(chan struct{}, 1),
		stop:      make(chan struct{}),
	}
	m.wg.Add(1)
	go m.housekeeping()
	if opts.Leases != nil {
		m.wg.Add(1)
		go m.leaseLoop()
	}
	return m
}

// Hooks are the global hook chains, run before each agent's own.
func (m *Manager) Hooks() *Hooks { return m.hooks }

// Providers is the model route registry.
func (m *Manager) Providers() *llm.Registry { return m.providers }

// SubscribeLive receives every agent's live notifications.
func (m *Manager) SubscribeLive(fn func(LiveEvent)) (cancel func()) { return m.live.subscribe(fn) }

// Lookup returns a loaded agent without loading it.
func (m *Manager) Lookup(id string) (*Agent, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.agents[id]
	return a, ok
}

// Create starts the agent of a new session (its row already stored).
func (m *Manager) Create(ctx context.Context, meta Meta) (*Agent, error) {
	return m.installLeased(ctx, meta.ID, func() (*Agent, error) {
		h := meta.Header
		h.ID = meta.ID
		if h.CreatedAt == 0 {
			h.CreatedAt = m.clock()
		}
		l := session.New(h, session.Options{Clock: m.clock, Sink: m.sink(meta.ID)})
		return m.newAgent(meta, l), nil
	})
}

// ForkSeed returns the seed of a child forked from src at boundary (an
// inclusive seq; -1 = the end). The source must be at a completed-turn
// boundary there.
func (m *Manager) ForkSeed(ctx context.Context, srcID string, boundary int64) ([]session.Event, error) {
	src, err := m.Get(ctx, srcID)
	if err != nil {
		return nil, err
	}
	return session.Fork(src.log, boundary)
}

// CreateSeeded starts the agent of a forked or imported session from seed.
func (m *Manager) CreateSeeded(ctx context.Context, meta Meta, seed []session.Event) (*Agent, error) {
	a, err := m.installLeased(ctx, meta.ID, func() (*Agent, error) {
		h := meta.Header
		h.ID = meta.ID
		if h.CreatedAt == 0 {
			h.CreatedAt = m.clock()
		}
		h.SeedLength = int64(len(seed))
		l, err := session.NewSeeded(h, seed, session.Options{Clock: m.clock, Sink: m.sink(meta.ID)})
		if err != nil {
			return nil, err
		}
		return m.newAgent(meta, l), nil
	})
	if err != nil {
		return nil, err
	}
	return a, m.store.Flush(ctx, meta.ID)
}

// Get returns the live agent of a session, loading it (with crash repair)
// when needed. Concurrent calls share one load.
func (m *Manager) Get(ctx context.Context, id string) (*Agent, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrDisposed
	}
	if a, ok := m.agents[id]; ok {
		m.mu.Unlock()
		return a, nil
	}
	if c, ok := m.loading[id]; ok {
		m.mu.Unlock()
		select {
		case <-c.done:
			return c.agent, c.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	c := &loadCall{done: make(chan struct{})}
	m.loading[id] = c
	m.mu.Unlock()

	c.agent, c.err = m.load(ctx, id)

	m.mu.Lock()
	delete(m.loading, id)
	if c.err == nil {
		m.agents[id] = c.agent
	}
	m.mu.Unlock()
	close(c.done)
	if c.err == nil && m.opts.Leases != nil {
		// The lease was just taken: a dead holder's session goes on
		// where it stopped, whichever request loaded it (the takeover
		// loop no longer sees it as orphaned).
		if m.opts.Leased != nil {
			m.opts.Leased(context.WithoutCancel(ctx), id)
		}
		if m.runQueued(c.agent) {
			m.logger.Info("ran the queued input of a session whose lease was taken", "session", id)
		}
	}
	return c.agent, c.err
}

// load builds the agent of a stored session under its lease: the lease is
// taken before the log is read, so crash repair and every later append
// happen under it.
func (m *Manager) load(ctx context.Context, id string) (_ *Agent, err error) {
	meta, err := m.store.SessionMeta(ctx, id)
	if err != nil {
		return nil, err
	}
	if m.opts.Leases != nil && meta.Workspace != "" {
		// A replica takes only sessions whose workspace it reaches (on
		// the shared volume); another one will.
		if _, err := os.Stat(meta.Workspace); err != nil {
			return nil, fmt.Errorf("load session %s: workspace: %w: %w", id, ErrUnreachable, err)
		}
	}
	epoch, until, err := m.acquire(ctx, id)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			m.release(id, epoch)
		}
	}()
	l, err := m.store.LoadLog(ctx, id, m.clock)
	if err != nil {
		return nil, fmt.Errorf("load session %s: %w", id, err)
	}
	if m.opts.OnLoad != nil {
		if err := m.opts.OnLoad(l); err != nil {
			return nil, fmt.Errorf("load session %s: %w", id, err)
		}
	}
	a := m.newAgent(meta, l)
	a.epoch, a.leaseUntil = epoch, until
	nextTurn, nextStep, err := session.Inbox(l.Events(0, l.Len()), l.Header().SeedLength)
	if err != nil {
		return nil, fmt.Errorf("load session %s inbox: %w", id, err)
	}
	a.nextTurn, a.nextStep = nextTurn, nextStep
	if a.sent, err = session.SentKeys(l.Events(0, l.Len()), l.Header().SeedLength, m.clock()-session.SendKeyTTL); err != nil {
		return nil, fmt.Errorf("load session %s send keys: %w", id, err)
	}
	a.pruned = m.clock()
	return a, nil
}

// installLeased installs the agent of a new session under its lease.
func (m *Manager) installLeased(ctx context.Context, id string, build func() (*Agent, error)) (*Agent, error) {
	if m.opts.Leases != nil {
		// Taking the lease of a session live here would end the live
		// agent's term: refuse before.
		if _, ok := m.Lookup(id); ok {
			return nil, fmt.Errorf("session %s is already live", id)
		}
	}
	epoch, until, err := m.acquire(ctx, id)
	if err != nil {
		return nil, err
	}
	a, err := m.install(id, func() (*Agent, error) {
		a, err := build()
		if err == nil {
			a.epoch, a.leaseUntil = epoch, until
		}
		return a, err
	})
	if err != nil {
		m.release(id, epoch)
	}
	return a, err
}

func (m *Manager) install(id string, build func() (*Agent, error)) (*Agent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrDisposed
	}
	if _, ok := m.agents[id]; ok {
		return nil, fmt.Errorf("session %s is already live", id)
	}
	a, err := build()
	if err != nil {
		return nil, err
	}
	m.agents[id] = a
	return a, nil
}

func (m *Manager) newAgent(meta Meta, l *session.Log) *Agent {
	a := &Agent{
		id:        meta.ID,
		m:         m,
		log:       l,
		logger:    m.logger.With("session", meta.ID),
		scope:     m.tools.NewScope(),
		workspace: meta.Workspace,
		defaults:  llm.CallConfig{Provider: meta.Provider, Model: meta.Model},
		status:    StatusIdle,
		lastIdle:  time.Now(),
		sandbox:   meta.ID,
		taskSlots: make(chan struct{}, maxSubagents),
	}
	if meta.Subagent {
		// A child has the parent's sandbox, no session tools (MCP) of its
		// own and never the task tool (depth 1).
		a.subagent, a.sandbox = true, meta.Parent
		a.scope.Restrict(nil, []string{TaskToolName})
		return a
	}
	m.openSessionTools(a)
	return a
}

func (m *Manager) sink(id string) func(session.Event) {
	return func(ev session.Event) { m.store.Enqueue(id, ev) }
}

// Pin keeps an agent loaded while a viewer follows its log; the returned
// func releases it.
func (m *Manager) Pin(ctx context.Context, id string) (*Agent, func(), error) {
	for {
		a, err := m.Get(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		m.mu.Lock()
		if m.agents[id] != a { // unloaded between Get and the pin
			m.mu.Unlock()
			continue
		}
		a.pins++
		m.mu.Unlock()
		var once sync.Once
		return a, func() {
			once.Do(func() {
				m.mu.Lock()
				a.pins--
				m.mu.Unlock()
			})
		}, nil
	}
}

// Resume loads every session with waiting queue items and runs them. Called
// once at server start; interrupted turns were closed by crash repair. A
// paused queue (its last turn was stopped by a person, blocked or failed)
// stays paused: it waits for the next waking input, as it would have
// without the restart.
func (m *Manager) Resume(ctx context.Context) error {
	ids, err := m.store.PendingInboxSessions(ctx)
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	var errs []error
	for _, id := range ids {
		if _, err := m.resume(ctx, id); err != nil && !errors.Is(err, ErrNotOwner) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// resume loads id (crash repair closes an interrupted turn) and runs its
// waiting queue unless the queue is paused; it reports whether a turn was
// started.
func (m *Manager) resume(ctx context.Context, id string) (bool, error) {
	a, err := m.Get(ctx, id)
	if errors.Is(err, ErrNotOwner) {
		// Another live replica runs it (and resumed it there).
		m.logger.Info("queued session owned by another replica: not resumed here", "session", id, "err", err)
		return false, err
	}
	if err != nil {
		return false, err
	}
	run := m.runQueued(a)
	if run {
		m.logger.Info("resumed session with queued input", "session", id)
	}
	return run, nil
}

// runQueued starts a loaded agent's waiting queue unless the queue is
// paused; it reports whether it did.
func (m *Manager) runQueued(a *Agent) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	run := a.pendingLocked() && !queuePaused(a.log)
	if run {
		a.wakeLocked()
	}
	return run
}

// TakeOver loads a session whose owner replica stopped renewing its lease
// (killed or hung) and goes on where it stopped: taking the lease makes
// the old owner's late appends fail, the load's crash repair closes the
// turn that was open (once: only the lease's holder loads), and the
// waiting queue runs. A session another live replica took first fails
// with ErrNotOwner; one whose workspace this replica cannot reach is left
// alone (ErrUnreachable).
func (m *Manager) TakeOver(ctx context.Context, id string) error {
	if _, ok := m.Lookup(id); ok {
		return nil
	}
	if _, err := m.resume(ctx, id); err != nil {
		return err
	}
	m.logger.Warn("took over a session whose replica stopped renewing its lease or handed it over", "session", id)
	return nil
}

// ErrUnreachable is wrapped when this replica cannot reach a session's
// workspace (not on the shared volume here), so it does not take it.
var ErrUnreachable = errors.New("session workspace not reachable from this replica")

// Drain stops starting turns and waits, within ctx, for the running ones
// to end: the first step of a graceful shutdown, so that a turn shorter
// than the budget completes rather than being cut (Shutdown then stops
// whatever still runs). Input is still taken meanwhile (a steer enters a
// running turn; a queued message waits) and stays queued: Shutdown hands
// such sessions over to the other replicas, or the next start runs them.
// A subagent's turn still starts: its parent's running turn waits for it.
func (m *Manager) Drain(ctx context.Context) error {
	m.draining.Store(true)
	m.mu.Lock()
	agents := make([]*Agent, 0, len(m.agents))
	for _, a := range m.agents {
		agents = append(agents, a)
	}
	m.mu.Unlock()
	for _, a := range agents {
		if err := a.Wait(ctx); err != nil {
			return fmt.Errorf("session %s still runs its turn: %w", a.id, err)
		}
	}
	return nil
}

// ErrShutdownAbandoned is wrapped when Shutdown's budget ran out before
// every agent stopped and every write was stored.
var ErrShutdownAbandoned = errors.New("shutdown abandoned unfinished work")

// Shutdown cancels running turns (keeping their queues for the next start),
// waits for every agent to go idle, and flushes, all within ctx. When ctx
// ends first, what is still waiting is abandoned: the manager's root context
// is cancelled (flushes and statements honouring it give up), the error
// names the unfinished work, and Shutdown returns. Nothing acknowledged is
// lost: an event a caller was told is stored was flushed before, and the
// next start's crash repair closes a turn whose end was not written. Later
// calls return nil at once.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	agents := make([]*Agent, 0, len(m.agents))
	for _, a := range m.agents {
		agents = append(agents, a)
	}
	m.mu.Unlock()

	for _, a := range agents {
		// Disposed first: the aborted driver must not start the queued
		// turns; they run at the next start.
		a.mu.Lock()
		a.disposed = true
		a.mu.Unlock()
		a.Cancel(session.CancelCause{Kind: session.CauseShutdown}, true)
	}
	// The drain runs apart so that a store which ignores ctx (a dead disk)
	// cannot hold Shutdown past its budget.
	d := &drain{left: map[string]string{}}
	for _, a := range agents {
		d.left[a.id] = "stopping its turn"
	}
	done := make(chan error, 1)
	go func() { done <- m.drain(ctx, agents, d) }()
	select {
	case err := <-done:
		if err == nil || ctx.Err() == nil {
			m.abandon(nil)
			return err
		}
	case <-ctx.Done():
	}
	what := d.abandoned()
	err := fmt.Errorf("%w: %s: %w", ErrShutdownAbandoned, what, context.Cause(ctx))
	m.abandon(err)
	// The next start's crash repair closes an open turn whose events were
	// not stored as interrupted.
	m.logger.Error("shutdown budget spent: abandoning unfinished writes", "abandoned", what, "err", context.Cause(ctx))
	return err
}

// drain is the progress of Shutdown's waits: the sessions not yet done (and
// what each still waits for) and the manager-wide step under way.
type drain struct {
	mu   sync.Mutex
	left map[string]string // session → what it still waits for
	step string
}

func (d *drain) set(id, what string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if what == "" {
		delete(d.left, id)
		return
	}
	d.left[id] = what
}

func (d *drain) setStep(step string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.step = step
}

// abandoned describes the unfinished work, e.g. "session s1 (storing its
// events), the pending inbox counts of 2 sessions".
func (d *drain) abandoned() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	ids := slices.Sorted(maps.Keys(d.left))
	var parts []string
	for _, id := range ids {
		parts = append(parts, fmt.Sprintf("session %s (%s)", id, d.left[id]))
	}
	if d.step != "" {
		parts = append(parts, d.step)
	}
	if len(parts) == 0 {
		return "nothing left"
	}
	return strings.Join(parts, ", ")
}

// drain waits for agents to stop and flushes their events, stops the
// background loops and records the pending inbox counts. Every wait honours
// ctx; a store call that does not is abandoned by Shutdown.
func (m *Manager) drain(ctx context.Context, agents []*Agent, d *drain) error {
	var errs []error
	for _, a := range agents {
		if err := a.Wait(ctx); err != nil {
			return errors.Join(append(errs, fmt.Errorf("session %s did not stop: %w", a.id, err))...)
		}
		a.closeSessionTools()
		d.set(a.id, "storing its events")
		if err := m.store.Flush(ctx, a.id); err != nil {
			errs = append(errs, fmt.Errorf("flush session %s: %w", a.id, err))
			if ctx.Err() != nil {
				return errors.Join(errs...)
			}
			d.set(a.id, "")
			continue // the lease expires on its own; nothing is lost
		}
		d.set(a.id, "")
		m.handOver(a)
	}
	d.setStep("the background loops (pending inbox counts, idle unloads, lease renewals)")
	close(m.stop)
	m.wg.Wait()
	m.pendMu.Lock()
	n := len(m.pendDirty)
	m.pendMu.Unlock()
	d.setStep(fmt.Sprintf("the pending inbox counts of %d sessions", n))
	if err := m.flushPending(ctx); err != nil {
		errs = append(errs, err)
	}
	d.setStep("")
	return errors.Join(errs...)
}

// agentIdle is called by a driver that just went idle.
func (m *Manager) agentIdle(a *Agent) {
	m.mu.Lock()
	a.lastIdle = time.Now()
	m.mu.Unlock()
}

// pendingChanged records the new queue length for persistence (coalesced,
// written in the background; called with the agent's lock held).
func (m *Manager) pendingChanged(id string, n int) {
	m.pendMu.Lock()
	m.pendDirty[id] = n
	m.pendMu.Unlock()
	select {
	case m.pendKick <- struct{}{}:
	default:
	}
}

// flushPending writes the queue lengths changed since the last call. A
// count that could not be written stays recorded for the next call.
func (m *Manager) flushPending(ctx context.Context) error {
	m.pendMu.Lock()
	dirty := m.pendDirty
	m.pendDirty = map[string]int{}
	m.pendMu.Unlock()
	var errs []error
	for id, n := range dirty {
		if err := m.store.SetPendingInbox(ctx, id, n); err != nil {
			m.logger.Warn("record pending inbox", "session", id, "err", err)
			errs = append(errs, fmt.Errorf("record pending inbox of session %s: %w", id, err))
			m.pendMu.Lock()
			if _, newer := m.pendDirty[id]; !newer {
				m.pendDirty[id] = n
			}
			m.pendMu.Unlock()
		}
	}
	return errors.Join(errs...)
}

func (m *Manager) housekeeping() {
	defer m.wg.Done()
	period := time.Minute
	if m.opts.IdleUnload > 0 && m.opts.IdleUnload/4 < period {
		period = max(m.opts.IdleUnload/4, 10*time.Millisecond)
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-m.pendKick:
			// Housekeeping serves no request: the manager's root context,
			// which an abandoned shutdown cancels. Failures are logged.
			_ = m.flushPending(m.baseCtx)
		case <-tick.C:
			m.unloadIdle()
		}
	}
}

// unloadIdle drops agents idle for longer than IdleUnload with no viewer;
// the next Get reloads them from the store.
func (m *Manager) unloadIdle() {
	if m.opts.IdleUnload <= 0 {
		return
	}
	var gone []*Agent
	m.mu.Lock()
	for id, a := range m.agents {
		if m.takeIdleLocked(id, a, m.opts.IdleUnload) {
			gone = append(gone, a)
		}
	}
	m.mu.Unlock()
	m.dispose(gone)
}

// Unload drops the agent of id now when it is idle with no viewer, as the
// idle unload does (the next Get reloads it), and reports whether it did.
// An import uses it: the session it just checked loads need not stay in
// memory until someone opens it.
func (m *Manager) Unload(id string) bool {
	m.mu.Lock()
	a, ok := m.agents[id]
	ok = ok && m.takeIdleLocked(id, a, 0)
	m.mu.Unlock()
	if ok {
		m.dispose([]*Agent{a})
	}
	return ok
}

// takeIdleLocked removes a from the manager when it has been idle, with no
// viewer, for longer than after (m.mu held).
func (m *Manager) takeIdleLocked(id string, a *Agent, after time.Duration) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	idle := a.status == StatusIdle && !a.maintenance && len(a.pending) == 0
	if !idle || a.pins != 0 || after > 0 && time.Since(a.lastIdle) <= after {
		return false
	}
	a.disposed = true
	delete(m.agents, id)
	return true
}

// dispose finishes unloading agents takeIdleLocked removed.
func (m *Manager) dispose(gone []*Agent) {
	for _, a := range gone {
		a.closeSessionTools()
		// The manager's root context: no request waits for an unload, and
		// its events must be durable before the agent is gone.
		if err := m.store.Flush(m.baseCtx, a.id); err != nil {
			m.logger.Warn("flush unloaded agent", "session", a.id, "err", err)
		} else {
			m.release(a.id, a.epoch)
		}
		m.live.publish(LiveEvent{Kind: LiveUnloaded, Session: a.id})
	}
}

// Loaded returns the number of live agents (metrics).
func (m *Manager) Loaded() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.agents)
}

// Running returns the number of running agents (metrics).
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, a := range m.agents {
		if a.Status() == StatusRunning {
			n++
		}
	}
	return n
}

// Remove stops a session's agent for good (the session is being deleted):
// the running turn is cancelled with cause disposed, the agent waits idle and
// leaves the manager. Later calls on the removed agent fail with ErrDisposed.
func (m *Manager) Remove(ctx context.Context, id string) error {
	m.mu.Lock()
	a, ok := m.agents[id]
	if ok {
		delete(m.agents, id)
	}
	m.mu.Unlock()
	if !ok {
		return nil
	}
	a.mu.Lock()
	a.disposed = true
	a.mu.Unlock()
	a.Cancel(session.CancelCause{Kind: session.CauseDisposed}, false)
	if err := a.Wait(ctx); err != nil {
		return fmt.Errorf("remove session %s: %w", id, err)
	}
	a.closeSessionTools()
	m.release(a.id, a.epoch)
	m.live.publish(LiveEvent{Kind: LiveUnloaded, Session: id})
	return nil
}

// queuePaused reports whether the log's last turn left its queue parked:
// it ended aborted by anything but a shutdown, blocked, or in error. A turn
// cut by a shutdown or a crash (interrupted), or one that completed, does
// not pause the queue.
func queuePaused(l *session.Log) bool {
	for seq := l.Len() - 1; seq >= 0; seq-- {
		ev, ok := l.Event(seq)
		if !ok {
			return false
		}
		switch ev.Type {
		case session.TypeTurnStart:
			return false
		case session.TypeTurnEnd:
			te, err := session.Decode[session.TurnEnd](ev)
			if err != nil {
				return false
			}
			switch te.Reason.Kind {
			case session.ReasonBlocked, session.ReasonError:
				return true
			case session.ReasonAborted:
				return te.Reason.Cause == nil || te.Reason.Cause.Kind != session.CauseShutdown
			}
			return false
		}
	}
	return false
}
