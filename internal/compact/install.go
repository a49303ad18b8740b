package compact

import (
	"context"
	"fmt"
	"sync"

	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/session"
)

// compactor holds the automatic triggers' shared state.
type compactor struct {
	opts      Options
	providers *llm.Registry
	pruner    *Pruner // nil when pruning is disabled

	warned sync.Map // routes without a context window, warned once

	mu       sync.Mutex
	overflow map[string]overflowBudget // by session id
}

// overflowBudget counts the overflow retries of one step. A step ends with
// one successful assistant/message and a turn starts a new step, so keying
// by (turn, step) resets the budget exactly as upstream does (on any
// successful response and on idle).
type overflowBudget struct {
	turn, step, used int
}

func newCompactor(providers *llm.Registry, opts Options) *compactor {
	opts = opts.withDefaults()
	c := &compactor{opts: opts, providers: providers, overflow: map[string]overflowBudget{}}
	if !opts.Pruner.Disabled {
		p, err := NewPruner(opts.Pruner)
		if err != nil {
			opts.Logger.Warn("tool-result pruner settings rejected; using the defaults", "err", err)
			p, _ = NewPruner(PrunerOptions{})
		}
		c.pruner = p
	}
	return c
}

// Install registers the automatic triggers on m's global hooks: pressure
// compaction on agent/pre-step and context-overflow recovery on
// agent/request-error (upstream §6.3). The returned func removes both.
func Install(m *driver.Manager, opts Options) (remove func()) {
	c := newCompactor(m.Providers(), opts)
	removePre := m.Hooks().OnPreStep(c.preStep)
	removeErr := m.Hooks().OnRequestError(c.requestError)
	return func() {
		removePre()
		removeErr()
	}
}

// preStep relieves context pressure before next() runs, so every
// compaction event lands between the claim and step/start. A compaction
// that fails or leaves the session above the threshold is a warning, never
// a turn failure.
func (c *compactor) preStep(ctx context.Context, p *driver.PreStepPayload, next func(context.Context) (driver.PreStepDecision, error)) (driver.PreStepDecision, error) {
	if ctx.Err() == nil {
		if err := c.relievePressure(ctx, p.Agent.Log(), p.Agent.ID()); err != nil && ctx.Err() == nil {
			c.opts.Logger.Warn("compaction did not relieve context pressure; continuing the turn",
				"session", p.Agent.ID(), "turn", p.Turn, "step", p.Step, "err", err)
		}
	}
	return next(ctx)
}

// relievePressure: below the threshold nothing happens; above it, prune,
// then summarize the head up to CompactionRetries+1 times, keeping
// RetainRatio of the window verbatim.
func (c *compactor) relievePressure(ctx context.Context, l *session.Log, sessionID string) error {
	h, ok := l.RequestHeader()
	if !ok {
		return nil // nothing was requested yet: no route, no baseline
	}
	window := c.window(h.Config)
	if window <= 0 {
		return nil
	}
	t := c.opts.thresholds(window)
	m := c.opts.Meter.Measure(l, window)
	if m.TotalTokens < t.threshold {
		return nil
	}
	if err := checkUnlocked(l); err != nil {
		return err
	}
	if c.pruner != nil {
		if _, err := c.pruner.PruneLog(l); err != nil {
			return err
		}
		if m = c.opts.Meter.Measure(l, window); m.TotalTokens < t.threshold {
			return nil
		}
	}
	for range c.opts.CompactionRetries + 1 {
		rng, ok := SelectRange(m, t.retain)
		if !ok {
			return fmt.Errorf("%w: %d tokens, threshold %d", errNothingToCompact, m.TotalTokens, t.threshold)
		}
		if _, err := compactRegion(ctx, c.region(l, sessionID, h, m, rng)); err != nil {
			return err
		}
		if m = c.opts.Meter.Measure(l, window); m.TotalTokens < t.threshold {
			return nil
		}
	}
	return fmt.Errorf("still %d tokens after compacting %d time(s) (threshold %d)", m.TotalTokens, c.opts.CompactionRetries+1, t.threshold)
}

// requestError recovers from CONTEXT_WINDOW_EXCEEDED: prune, then summarize
// everything but the newest balanced unit, and retry in the same step only
// if the surface replacement generation advanced. Otherwise (and whenever
// the turn is cancelled) next() keeps the original error authoritative.
func (c *compactor) requestError(ctx context.Context, p *driver.RequestErrorPayload, next func(context.Context) (driver.RequestErrorDecision, error)) (driver.RequestErrorDecision, error) {
	if p.Failure == nil || p.Failure.Code != llm.CodeContextWindowExceeded || ctx.Err() != nil {
		return next(ctx)
	}
	id, l := p.Agent.ID(), p.Agent.Log()
	if !c.overflowRetryLeft(id, p.Turn, p.Step) {
		return next(ctx)
	}
	gen := l.ReplaceGeneration()
	err := c.recoverOverflow(ctx, l, id)
	if ctx.Err() != nil {
		return next(ctx)
	}
	if l.ReplaceGeneration() > gen {
		c.useOverflowRetry(id, p.Turn, p.Step)
		if err != nil {
			c.opts.Logger.Warn("context-overflow compaction failed after pruning; retrying with the pruned history", "session", id, "err", err)
		}
		return driver.RequestErrorDecision{Retry: true}, nil
	}
	if err != nil {
		c.opts.Logger.Warn("context-overflow compaction failed; keeping the original error", "session", id, "err", err)
	}
	return next(ctx)
}

func (c *compactor) recoverOverflow(ctx context.Context, l *session.Log, sessionID string) error {
	h, ok := l.RequestHeader()
	if !ok {
		return nil
	}
	if err := checkUnlocked(l); err != nil {
		return err
	}
	if c.pruner != nil {
		if _, err := c.pruner.PruneLog(l); err != nil {
			return err
		}
	}
	// The provider already said the request is too large: no threshold
	// applies, so the window only labels the measurement.
	m := c.opts.Meter.Measure(l, c.opts.Window(c.providers, h.Config.Provider, h.Config.Model))
	rng, ok := SelectRange(m, 0)
	if !ok {
		return errNothingToCompact
	}
	_, err := compactRegion(ctx, c.region(l, sessionID, h, m, rng))
	return err
}

func (c *compactor) region(l *session.Log, sessionID string, h session.EpochHeader, m Measurement, rng Range) region {
	return region{
		log: l, sessionID: sessionID, providers: c.providers, header: h,
		meas: m, rng: rng, maxTokens: c.opts.MaxSummaryTokens,
	}
}

// window resolves the route's context window, warning once per route that
// has none (pressure compaction is then off for it).
func (c *compactor) window(cfg llm.CallConfig) int64 {
	w := c.opts.Window(c.providers, cfg.Provider, cfg.Model)
	if w <= 0 {
		if _, seen := c.warned.LoadOrStore(cfg.Provider+"/"+cfg.Model, true); !seen {
			c.opts.Logger.Warn("no context window known for the route; pressure compaction is off for it",
				"provider", cfg.Provider, "model", cfg.Model)
		}
	}
	return w
}

func (c *compactor) overflowRetryLeft(id string, turn, step int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.overflow[id]
	if b.turn != turn || b.step != step {
		return c.opts.MaxOverflowRetries > 0
	}
	return b.used < c.opts.MaxOverflowRetries
}

func (c *compactor) useOverflowRetry(id string, turn, step int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.overflow[id]
	if b.turn != turn || b.step != step {
		b = overflowBudget{turn: turn, step: step}
	}
	b.used++
	c.overflow[id] = b
}
