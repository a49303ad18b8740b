package tools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"harness/internal/llm"
)

// DefaultMaxParallel is the rolling pool size for concurrency-safe calls.
const DefaultMaxParallel = 10

// Sink is what the scheduler uses to log a step's tool activity; the driver
// implements it. Calls come from the scheduler goroutine only, in order.
//
// Both methods must append even when ctx is done: every started call gets
// its tool/call and tool/result, also in a cancelled step. ctx bounds only
// the waiting a method does (a flush).
type Sink interface {
	// CallStarted appends tool/call when a call starts, makes it durable
	// before the body can run, and returns its seq. ctx is the step's:
	// once it is done no body runs, so CallStarted may stop waiting for
	// durability and return the seq without an error.
	CallStarted(ctx context.Context, call *Call) (seq int64, err error)
	// Commit appends tool/result (in model order) citing callSeq and routes
	// the result's additional contexts to the next-step inbox. The
	// scheduler passes a ctx that is not cancelled with the step: the
	// outcome of a cancelled call is part of the record.
	Commit(ctx context.Context, call *Call, callSeq int64, r Result) error
}

// Pipeline runs one agent's tool calls. Hooks run in slice order (the first
// hook is outermost). A Pipeline may be reused for every step of the agent;
// Run is not meant to be called concurrently for the same agent.
type Pipeline struct {
	Scope  *Scope
	Pre    []PreHook
	Post   []PostHook
	Guards []Guard
	Around []ExecuteHook
	// MaxParallel caps bodies in flight in a parallel group; 0 means 10.
	MaxParallel int
	// OutputInterval throttles tool/output events; 0 means 100 ms.
	OutputInterval time.Duration
	// MaxLiveOutput caps live output bytes per call; 0 means 1 MiB.
	MaxLiveOutput int
	// Logger receives contained failures; nil means slog.Default().
	Logger *slog.Logger
}

// Outcome summarises a step's tool calls for the driver.
type Outcome struct {
	// Concluded is set when a successful result asked to conclude the turn.
	Concluded bool `json:"concluded"`
	// Aborted is set when ctx was cancelled before the calls were all done.
	Aborted bool `json:"aborted"`
}

// ErrNoScope is returned by Run on a Pipeline without a Scope.
var ErrNoScope = errors.New("tools: pipeline has no scope")

type slot struct {
	call    *Call
	started bool
	seq     int64
	done    bool
	bodyRan bool
	result  Result
}

type run struct {
	p         *Pipeline
	ctx       context.Context
	sink      Sink
	slots     []*slot
	bodies    chan int
	inflight  int
	committed int
	err       error
	outcome   Outcome
}

// Run executes the tool-call blocks of one assistant message (model order).
// Calls are grouped by execution mode, classified just before each start:
// an exclusive call runs alone; consecutive parallel calls share a rolling
// pool of MaxParallel bodies. Pre-execute, approvals, post-execute and
// commits happen strictly in model order; only bodies overlap.
//
// Cancelling ctx is the abort: nothing new starts, running bodies are
// drained and committed, and every call not started gets a synthetic
// tool/call + ABORTED_BEFORE_DISPATCH result. A Sink error stops new starts,
// drains running bodies and is returned (no synthetic results).
func (p *Pipeline) Run(ctx context.Context, calls []llm.ContentBlock, turn, step int, env Env, sink Sink) (Outcome, error) {
	if p.Scope == nil {
		return Outcome{}, ErrNoScope
	}
	r := &run{p: p, ctx: ctx, sink: sink}
	for _, b := range calls {
		if b.Type != llm.BlockToolCall {
			continue
		}
		c := newCall(b, len(r.slots), turn, step, env, p.Scope.State())
		r.slots = append(r.slots, &slot{call: c})
	}
	r.bodies = make(chan int, len(r.slots))

	next := 0
	for next < len(r.slots) && r.canStart() {
		end := next + 1
		if r.mode(r.slots[next].call) == ModeParallel {
			end = len(r.slots)
		}
		next = r.runGroup(next, end)
	}
	if r.err != nil {
		return r.outcome, r.err
	}
	for i := next; i < len(r.slots); i++ {
		s := r.slots[i]
		seq, err := sink.CallStarted(ctx, s.call)
		if err != nil {
			return r.outcome, fmt.Errorf("log aborted call %s: %w", s.call.ID, err)
		}
		if err := sink.Commit(r.commitCtx(), s.call, seq, abortedBeforeDispatchResult()); err != nil {
			return r.outcome, fmt.Errorf("commit aborted call %s: %w", s.call.ID, err)
		}
	}
	r.outcome.Aborted = ctx.Err() != nil
	return r.outcome, nil
}

// mode classifies a call now, logging a contained classifier panic.
func (r *run) mode(c *Call) Mode {
	m, panicked := r.p.Scope.classify(c.Name, c.Args)
	if panicked != nil {
		r.p.logger().Warn("tools: concurrency classifier panicked; running exclusively", "tool", c.Name, "call", c.ID, "panic", fmt.Sprint(panicked))
	}
	return m
}

// commitCtx is the context of commits: the step's values without its
// cancellation, because the results of a cancelled step (drained bodies,
// aborted calls) must still be recorded.
func (r *run) commitCtx() context.Context { return context.WithoutCancel(r.ctx) }

func (r *run) canStart() bool { return r.err == nil && r.ctx.Err() == nil }

func (r *run) poolSize() int {
	if r.p.MaxParallel > 0 {
		return r.p.MaxParallel
	}
	return DefaultMaxParallel
}

// runGroup runs slots [start, end) and returns the first slot it did not
// start. A parallel group ends early at the first later call that no longer
// classifies parallel; on return nothing of the group is in flight.
func (r *run) runGroup(start, end int) int {
	next := start
	for {
		for r.canStart() && next < end && r.inflight < r.poolSize() {
			if next != start {
				c := r.slots[next].call
				if r.mode(c) != ModeParallel {
					end = next
					break
				}
			}
			if !r.start(next) {
				break
			}
			next++
			r.commitReady()
		}
		if r.inflight == 0 {
			return next
		}
		i := <-r.bodies
		r.inflight--
		r.slots[i].done = true
		r.commitReady()
	}
}

// start logs the call, runs its ordered prepare stage and dispatches the
// body. It reports false when the sink failed (the call did not start).
func (r *run) start(i int) bool {
	s := r.slots[i]
	seq, err := r.sink.CallStarted(r.ctx, s.call)
	if err != nil {
		r.err = fmt.Errorf("log tool call %s: %w", s.call.ID, err)
		return false
	}
	s.started, s.seq = true, seq
	e, res, dispatch := r.p.prepare(r.ctx, s.call)
	if !dispatch {
		s.result, s.done = res, true
		return true
	}
	s.bodyRan = true
	r.inflight++
	go func() {
		s.result = r.p.execute(r.ctx, s.call, e)
		r.bodies <- i
	}()
	return true
}

// commitReady commits, in model order, every leading slot whose outcome is
// known.
func (r *run) commitReady() {
	for r.err == nil && r.committed < len(r.slots) {
		s := r.slots[r.committed]
		if !s.started || !s.done {
			return
		}
		res := r.p.finish(r.ctx, s.call, s.result, s.bodyRan)
		if err := r.sink.Commit(r.commitCtx(), s.call, s.seq, res); err != nil {
			r.err = fmt.Errorf("commit tool result %s: %w", s.call.ID, err)
			return
		}
		if res.ConcludesTurn {
			r.outcome.Concluded = true
		}
		r.committed++
	}
}
