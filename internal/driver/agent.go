package driver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"harness/internal/llm"
	"harness/internal/session"
	"harness/internal/tools"
)

// Errors returned to callers of Agent methods. The web layer maps them to
// coded client errors.
var (
	ErrDisposed       = errors.New("agent disposed")
	ErrDuplicateID    = errors.New("duplicate pending message id")
	ErrItemNotFound   = errors.New("queue item not found")
	ErrNotPending     = errors.New("interaction is not pending")
	ErrBadAnswer      = errors.New("answer does not match the question")
	ErrEmptyMessage   = errors.New("message is empty")
	ErrUnknownModel   = errors.New("unknown provider")
	ErrInvalidMode    = errors.New("invalid permission mode")
	ErrInvalidEffort  = errors.New("invalid reasoning effort")
	ErrBusy           = errors.New("agent is busy")
	ErrNotIdleForTask = errors.New("maintenance needs an idle agent")
	// ErrSubagent: a subagent's session takes no input from outside; its
	// parent's task call drives it.
	ErrSubagent = errors.New("a subagent's session takes no input")
	// ErrNotDurable: the change was accepted in memory (it will run and be
	// stored once the database takes writes again) but is not on disk yet.
	ErrNotDurable = errors.New("accepted but not yet stored")
	// ErrNotStored: the store refused a send and it was taken back;
	// nothing of it is kept.
	ErrNotStored = errors.New("not stored")
	// ErrKeyConflict: a send key already names a message with other
	// content.
	ErrKeyConflict = errors.New("send key reused with other content")
)

// Agent drives one live session. All methods are safe for concurrent use.
type Agent struct {
	id        string
	m         *Manager
	log       *session.Log
	logger    *slog.Logger
	hooks     Hooks
	scope     *tools.Scope
	own       sessionTools // the session's own tools (MCP), synced at assembly
	workspace string
	defaults  llm.CallConfig // the session's configured route
	// sandbox is the session whose sandbox and network policy the tools
	// use: its own, or a subagent's parent's.
	sandbox string
	// subagent: the session is a subagent's child; it takes no input but
	// its task (sendTask) and starts no subagents. parent is the live
	// parent agent that spawned it in this process (nil once reloaded).
	subagent bool
	parent   *Agent
	// taskSlots bound the subagents this agent runs at once.
	taskSlots chan struct{}

	mu       agentMu
	status   Status
	nextTurn []llm.Message
	nextStep []llm.Message
	act      *activity // nil while idle
	// wake is the wake latch: a waking input arrived while the current
	// activity was aborting (or during maintenance). Only then does the
	// driver go on after a cancelled turn (upstream §2.5); input that
	// arrived before a Stop stays queued.
	wake     bool
	disposed bool
	idleCh   chan struct{} // closed while idle
	// maintenance is true while a RunMaintenance task holds the agent.
	maintenance bool

	pending map[string]*pendingInteraction

	// sent holds the send keys of the last SendKeyTTL (guarded by mu);
	// pruned is when it was last swept (epoch ms).
	sent   map[session.SendKey]session.Sent
	pruned int64

	// request bookkeeping of this agent instance (one driver at a time).
	headerLogged bool
	lastContext  *session.RequestContext
	stepOpen     bool // driver goroutine only

	pins     int       // live subscribers keeping the agent loaded; guarded by m.mu
	lastIdle time.Time // guarded by m.mu

	// epoch is the lease term the agent runs under (0: no leases);
	// leaseUntil is when it lapses unless renewed (guarded by m.mu).
	epoch      int64
	leaseUntil time.Time
	// revoked: the lease was lost and the agent stopped; its queue
	// length is no longer recorded (guarded by mu).
	revoked bool
}

// agentMu is the agent's lock. Appending to the log while holding it goes
// through appendLocked, which holds the log's delivery until Unlock: log
// subscribers then run after the lock is released, so one that calls back
// into the agent (a Followup from an observer of the inbox splice) cannot
// deadlock it.
type agentMu struct {
	sync.Mutex
	release func() // the log delivery hold taken in this critical section
}

// Unlock releases the lock, then the delivery hold (delivering what was
// appended meanwhile on this goroutine).
func (m *agentMu) Unlock() {
	release := m.release
	m.release = nil
	m.Mutex.Unlock()
	if release != nil {
		release()
	}
}

// appendLocked appends a non-surface event while a.mu is held; subscribers
// see it once a.mu is released.
func (a *Agent) appendLocked(t session.Type, data any) (session.Event, error) {
	if a.mu.release == nil {
		a.mu.release = a.log.HoldDelivery()
	}
	return a.log.Append(t, data)
}

// activity is one driver run's cancellation scope.
type activity struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	cause  *session.CancelCause // first cause wins
}

// cancelError carries a CancelCause through context.Cause.
type cancelError struct{ cause session.CancelCause }

func (e *cancelError) Error() string { return "cancelled: " + string(e.cause.Kind) }

// ID is the session id.
func (a *Agent) ID() string { return a.id }

// Log is the agent's session log. Callers may read and subscribe; appends
// belong to the agent.
func (a *Agent) Log() *session.Log { return a.log }

// Hooks are this agent's own hook chains (run after the manager's).
func (a *Agent) Hooks() *Hooks { return &a.hooks }

// Tools is the agent's tool scope.
func (a *Agent) Tools() *tools.Scope { return a.scope }

// Workspace is the session's workspace directory.
func (a *Agent) Workspace() string { return a.workspace }

// Status returns idle or running.
func (a *Agent) Status() Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status
}

// Queue returns a snapshot of the pending inbox.
func (a *Agent) Queue() Queue {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.queueLocked()
}

func (a *Agent) queueLocked() Queue {
	return Queue{Queued: cloneMsgs(a.nextTurn), Steering: cloneMsgs(a.nextStep)}
}

// Followup queues msg as the prompt of its own turn and wakes the driver. It
// returns once the message is durable.
func (a *Agent) Followup(ctx context.Context, msg llm.Message) error {
	_, err := a.send(ctx, msg, session.TargetNextTurn, true)
	return err
}

// Steer queues msg for the next step boundary and wakes the driver: while
// running it enters the current turn at its next step; while idle it starts
// a turn.
func (a *Agent) Steer(ctx context.Context, msg llm.Message) error {
	_, err := a.send(ctx, msg, session.TargetNextStep, true)
	return err
}

// Inject queues context for the next step without waking: it waits for the
// next step of a running turn, or for the next waking input.
func (a *Agent) Inject(ctx context.Context, msg llm.Message) error {
	_, err := a.send(ctx, msg, session.TargetNextStep, false)
	return err
}

// Send is Followup (target next-turn) or Steer (next-step) for a person's
// message, with its send key honoured: it returns the id of the message the
// send stands for, which is an earlier message's when msg repeats a key
// (session.KeyOf) within session.SendKeyTTL with the same content; then
// nothing new is queued. The same key with other content is ErrKeyConflict.
func (a *Agent) Send(ctx context.Context, msg llm.Message, target session.InboxTarget) (string, error) {
	return a.send(ctx, msg, target, true)
}

func (a *Agent) send(ctx context.Context, msg llm.Message, target session.InboxTarget, wakeup bool) (string, error) {
	if a.subagent {
		return "", ErrSubagent
	}
	return a.enqueue(ctx, msg, target, wakeup)
}

// enqueue queues msg, waits until it is durable, then wakes the driver. The
// wake waits for the store so that a send the store refuses is still queued
// and can be taken back (retract): the refusal then keeps nothing.
func (a *Agent) enqueue(ctx context.Context, msg llm.Message, target session.InboxTarget, wakeup bool) (string, error) {
	if err := validateInput(msg); err != nil {
		return "", err
	}
	key, keyed := session.KeyOf(msg)
	a.mu.Lock()
	if a.disposed {
		a.mu.Unlock()
		return "", ErrDisposed
	}
	if keyed {
		if prev, ok := a.sentLocked(key); ok {
			a.mu.Unlock()
			if prev.Digest != session.ContentDigest(msg.Content) {
				return "", ErrKeyConflict
			}
			// The first send's answer may have been lost before its
			// message was stored: answer once it is.
			if err := a.durable(ctx); err != nil {
				return "", err
			}
			return prev.MessageID, nil
		}
	}
	if a.hasPendingLocked(msg.ID) {
		a.mu.Unlock()
		return "", fmt.Errorf("%w: %s", ErrDuplicateID, msg.ID)
	}
	if wakeup && (a.abortingLocked() || a.maintenance) {
		// The current activity will not take next-step input; hold it for
		// the next turn and latch the wake.
		target = session.TargetNextTurn
	}
	list := a.listLocked(target)
	if err := a.spliceLocked(target, len(*list), 0, []llm.Message{msg}, ""); err != nil {
		a.mu.Unlock()
		return "", err
	}
	if keyed {
		a.recordSentLocked(key, msg)
	}
	a.publishLocked(LiveEvent{Kind: LiveInserted, Message: &msg})
	a.publishQueueLocked()
	a.mu.Unlock()

	err := a.durable(ctx)
	if err != nil && ctx.Err() == nil {
		return "", a.retract(msg, err)
	}
	// Stored, or the caller went away while it was being stored (it
	// stays queued; a repeat of its key finds it): run it.
	if wakeup {
		a.mu.Lock()
		if a.pendingLocked() {
			a.wakeLocked()
		}
		a.mu.Unlock()
	}
	if err != nil {
		return "", err
	}
	return msg.ID, nil
}

// retract takes back a send the store refused. Still queued, the message is
// removed with outcome not_stored and its key freed: nothing is kept and the
// client may send it again with the same key. Once a running turn claimed
// it, it stays (stored with the turn when writes succeed) and its key names
// it: a repeat answers once it is stored.
func (a *Agent) retract(msg llm.Message, cause error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, i := a.findLocked(msg.ID)
	if i < 0 {
		return cause
	}
	if err := a.spliceLocked(t, i, 1, nil, session.OutcomeNotStored); err != nil {
		a.logger.Error("take back a send the store refused", "err", err)
		return cause
	}
	if key, ok := session.KeyOf(msg); ok && a.sent[key].MessageID == msg.ID {
		delete(a.sent, key)
	}
	a.publishLocked(LiveEvent{Kind: LiveDiscarded, Message: &msg})
	a.publishQueueLocked()
	return fmt.Errorf("%w: %w", ErrNotStored, cause)
}

func validateInput(msg llm.Message) error {
	if msg.Role != llm.RoleUser {
		return fmt.Errorf("input message must have role user, got %q", msg.Role)
	}
	if err := msg.Validate(); err != nil {
		return err
	}
	if len(msg.Content) == 0 {
		return ErrEmptyMessage
	}
	return nil
}

// wakeLocked starts a driver when idle. A running driver needs no wake: it
// takes pending input at its next step or turn boundary. A wake that lands
// while the current activity is aborting (after a cancel, unless the cause
// is disposed) or during maintenance is latched: the driver restarts for it
// once it converges to idle (upstream §2.5).
func (a *Agent) wakeLocked() {
	if a.disposed || a.drainingLocked() {
		return
	}
	switch {
	case a.maintenance:
		a.wake = true
	case a.status == StatusRunning:
		if a.abortingLocked() && a.act.cause.Kind != session.CauseDisposed {
			a.wake = true
		}
	default:
		a.startLocked()
	}
}

// drainingLocked reports whether the manager starts no more turns for
// this agent (Manager.Drain); a subagent's are still started.
func (a *Agent) drainingLocked() bool {
	return !a.subagent && a.m.draining.Load()
}

// abortingLocked reports whether the current activity was cancelled.
func (a *Agent) abortingLocked() bool {
	return a.act != nil && a.act.cause != nil
}

// startLocked flips to running and opens the first turn before it returns:
// status running, turn/start and the claim are published synchronously
// (upstream §2.4); the driver goroutine runs the turn.
func (a *Agent) startLocked() {
	a.status = StatusRunning
	if a.idleCh == nil {
		a.idleCh = make(chan struct{})
	}
	a.act = newActivity(a.m.baseCtx)
	a.wake = false
	a.publishLocked(LiveEvent{Kind: LiveStatus, Status: StatusRunning})
	op := a.openTurnLocked()
	go a.run(a.act, op)
}

func newActivity(parent context.Context) *activity {
	ctx, cancel := context.WithCancelCause(parent)
	return &activity{ctx: ctx, cancel: cancel}
}

// Cancel aborts the current turn with cause. Unless keepInbox, the pending
// inbox is cleared first (durably, as canceled splices). Cancelling an idle
// agent only clears the inbox.
func (a *Agent) Cancel(cause session.CancelCause, keepInbox bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !keepInbox {
		a.clearLocked()
		a.wake = false
	}
	if a.act != nil && a.act.cause == nil {
		c := cause
		a.act.cause = &c
		a.act.cancel(&cancelError{cause: c})
	}
}

// WhenIdle returns a channel closed once the agent is idle (no driver and no
// maintenance task), following any driver that restarts before that.
func (a *Agent) WhenIdle() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.idleCh == nil {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return a.idleCh
}

// Wait blocks until the agent is idle or ctx is done.
func (a *Agent) Wait(ctx context.Context) error {
	select {
	case <-a.WhenIdle():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// EditPending replaces the content of a pending inbox item, keeping its id,
// its place and its images (an edit changes the text). It fails with ErrItemNotFound once the item was claimed.
func (a *Agent) EditPending(ctx context.Context, id string, content []llm.ContentBlock) error {
	return a.changePending(ctx, id, func(target session.InboxTarget, idx int, old llm.Message) error {
		msg := old
		// An edit changes what was written; the images attached stay.
		msg.Content = append(slices.Clip(content), old.Images()...)
		if err := validateInput(msg); err != nil {
			return err
		}
		if err := a.spliceLocked(target, idx, 1, []llm.Message{msg}, session.OutcomeCanceled); err != nil {
			return err
		}
		a.publishLocked(LiveEvent{Kind: LiveDiscarded, Message: &old})
		a.publishLocked(LiveEvent{Kind: LiveInserted, Message: &msg})
		return nil
	})
}

// RemovePending removes a pending inbox item.
func (a *Agent) RemovePending(ctx context.Context, id string) error {
	return a.changePending(ctx, id, func(target session.InboxTarget, idx int, old llm.Message) error {
		if err := a.spliceLocked(target, idx, 1, nil, session.OutcomeCanceled); err != nil {
			return err
		}
		a.publishLocked(LiveEvent{Kind: LiveDiscarded, Message: &old})
		return nil
	})
}

// SteerPending moves a queued prompt to the steering list so it enters the
// running turn at its next step ("steer now"), and wakes the driver.
func (a *Agent) SteerPending(ctx context.Context, id string) error {
	return a.changePending(ctx, id, func(target session.InboxTarget, idx int, msg llm.Message) error {
		if target == session.TargetNextStep {
			return nil
		}
		if err := a.spliceLocked(session.TargetNextTurn, idx, 1, nil, ""); err != nil {
			return err
		}
		if err := a.spliceLocked(session.TargetNextStep, len(a.nextStep), 0, []llm.Message{msg}, ""); err != nil {
			return err
		}
		a.wakeLocked()
		return nil
	})
}

// RunNext starts the paused queue: an idle agent with pending input (left
// queued by Stop, or parked after a blocked or failed turn) opens a turn
// now, which claims every steering item and the first queued prompt; the
// rest follows turn by turn. While the turn that was stopped is still
// winding down the wake is latched and runs once it is idle. A running
// agent answers ErrBusy (it takes its queue itself); an empty queue
// answers ErrItemNotFound.
func (a *Agent) RunNext(ctx context.Context) error {
	a.mu.Lock()
	switch {
	case a.disposed:
		a.mu.Unlock()
		return ErrDisposed
	case a.status == StatusRunning && !a.abortingLocked():
		a.mu.Unlock()
		return ErrBusy
	case !a.pendingLocked():
		a.mu.Unlock()
		return fmt.Errorf("%w: the queue is empty", ErrItemNotFound)
	}
	a.wakeLocked()
	a.mu.Unlock()
	return a.durable(ctx)
}

// ClearQueue removes every pending item (steering first, then queued), as
// canceled splices, without touching a running turn. Clearing an empty
// queue changes nothing.
func (a *Agent) ClearQueue(ctx context.Context) error {
	a.mu.Lock()
	if a.disposed {
		a.mu.Unlock()
		return ErrDisposed
	}
	a.clearLocked()
	a.mu.Unlock()
	return a.durable(ctx)
}

// changePending runs change on a pending item under the agent's lock, then
// publishes the queue and waits until the change is durable.
func (a *Agent) changePending(ctx context.Context, id string, change func(target session.InboxTarget, idx int, msg llm.Message) error) error {
	a.mu.Lock()
	target, idx := a.findLocked(id)
	if idx < 0 {
		a.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrItemNotFound, id)
	}
	if err := change(target, idx, (*a.listLocked(target))[idx]); err != nil {
		a.mu.Unlock()
		return err
	}
	a.publishQueueLocked()
	a.mu.Unlock()
	return a.durable(ctx)
}

// SetMode changes the permission mode; the model is told through the runtime
// context at its next step.
func (a *Agent) SetMode(ctx context.Context, mode session.PermissionMode, by *session.Actor) error {
	switch mode {
	case session.ModeReadOnly, session.ModeAsk, session.ModeAuto:
	default:
		return fmt.Errorf("%w: %q", ErrInvalidMode, mode)
	}
	if a.log.State().Mode == mode {
		return nil
	}
	if _, err := a.log.Append(session.TypePermissionMode, session.PermissionModeSet{Mode: mode, By: by}); err != nil {
		return err
	}
	return a.durable(ctx)
}

// SetModel selects the route used from the next request on.
func (a *Agent) SetModel(ctx context.Context, provider, model string, by *session.Actor) error {
	p, ok := a.m.providers.Get(provider)
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownModel, provider)
	}
	if model == "" {
		model = p.Info().DefaultModel
	}
	if _, err := a.log.Append(session.TypeModelSelected, session.ModelSelected{Provider: provider, Model: model, By: by,
		ContextWindow: p.Info().Model(model).ContextWindow}); err != nil {
		return err
	}
	return a.durable(ctx)
}

// SetEffort selects the reasoning effort from the next request on; ""
// returns to the route's default. Choosing the current one logs nothing.
func (a *Agent) SetEffort(ctx context.Context, effort llm.Effort, by *session.Actor) error {
	if effort != "" && !effort.Known() {
		return fmt.Errorf("%w: %q", ErrInvalidEffort, effort)
	}
	cur := a.log.State().Effort
	if (cur == nil && effort == "") || (cur != nil && cur.Effort == effort) {
		return nil
	}
	if _, err := a.log.Append(session.TypeEffortSelected, session.EffortSelected{Effort: effort, By: by}); err != nil {
		return err
	}
	return a.durable(ctx)
}

// SetTitle records a title chosen by a person; it pins the title.
func (a *Agent) SetTitle(ctx context.Context, title string, by *session.Actor) error {
	if _, err := a.log.Append(session.TypeSessionTitle, session.SessionTitle{Title: title, Source: session.TitleUser, By: by}); err != nil {
		return err
	}
	a.m.live.publish(LiveEvent{Kind: LiveTitle, Session: a.id})
	return a.durable(ctx)
}

// durable waits until everything appended so far is stored.
func (a *Agent) durable(ctx context.Context) error {
	if err := a.m.store.Flush(ctx, a.id); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("%w: %w", ErrNotDurable, err)
	}
	return nil
}

// RunMaintenance runs task (e.g. a manual compaction) only from true idle;
// status stays idle; waking input during it is latched and run after.
func (a *Agent) RunMaintenance(ctx context.Context, task func(ctx context.Context) error) error {
	a.mu.Lock()
	if a.disposed {
		a.mu.Unlock()
		return ErrDisposed
	}
	if a.status != StatusIdle || a.maintenance {
		a.mu.Unlock()
		return ErrBusy
	}
	a.maintenance = true
	a.idleCh = make(chan struct{})
	a.mu.Unlock()

	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("maintenance task panicked: %v", r)
			}
		}()
		return task(ctx)
	}()
	if ferr := a.m.store.Flush(ctx, a.id); err == nil {
		err = ferr
	}

	a.mu.Lock()
	a.maintenance = false
	if a.wake && a.pendingLocked() && !a.drainingLocked() {
		a.startLocked()
	} else {
		a.wake = false
		close(a.idleCh)
		a.idleCh = nil
	}
	a.mu.Unlock()
	return err
}

func (a *Agent) publishLocked(ev LiveEvent) {
	ev.Session = a.id
	a.m.live.publish(ev)
}

func (a *Agent) publishQueueLocked() {
	q := a.queueLocked()
	a.publishLocked(LiveEvent{Kind: LiveQueue, Queue: &q})
	if !a.revoked {
		a.m.pendingChanged(a.id, len(a.nextTurn)+len(a.nextStep))
	}
}

func cloneMsgs(in []llm.Message) []llm.Message {
	out := make([]llm.Message, len(in))
	copy(out, in)
	return out
}
