package driver

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"

	"harness/internal/llm"
)

// Hook chains are the driver's extension points (compaction, approvals,
// retries, tests). Waterfalls take (ctx, payload, next): calling next
// delegates to later hooks and finally the default; returning without calling
// it short-circuits; the outermost result is authoritative. Serial hooks run
// one after another and cannot veto.
//
// A hook that panics is recovered into an error; any hook error ends its turn
// with an error outcome (never the process).

// PreStepPayload is what agent/pre-step sees: the claimed batch for the
// proposed step.
type PreStepPayload struct {
	Agent    *Agent
	Turn     int
	Step     int // the proposed step number
	Messages []llm.Message
}

// PreStepDecision is reject, or enter with the messages to log as the step's
// user/message events (possibly none).
type PreStepDecision struct {
	Reject   bool
	Messages []llm.Message
}

// Enter builds an enter decision.
func Enter(msgs []llm.Message) PreStepDecision { return PreStepDecision{Messages: msgs} }

// PreStepHook is a waterfall listener of agent/pre-step.
type PreStepHook func(ctx context.Context, p *PreStepPayload, next func(context.Context) (PreStepDecision, error)) (PreStepDecision, error)

// Assembly is the system prompt and the tool schemas of one step.
type Assembly struct {
	Sections []Section
	// Contexts are runtime-context sections: told to the model through a
	// snapshot user message when they change, never through the system prompt.
	Contexts []Section
	Tools    []llm.ToolSchema
	Vars     map[string]string
}

// Section is one named, ordered piece of prompt text. Text may use {{name}}
// variables from Assembly.Vars.
type Section struct {
	Name  string
	Order int
	Text  string
}

// AssembleHook is a waterfall listener of system-prompt/assemble.
type AssembleHook func(ctx context.Context, a *Assembly, next func(context.Context) (*Assembly, error)) (*Assembly, error)

// RequestPayload is what agent/request sees.
type RequestPayload struct {
	Agent *Agent
	Turn  int
	Step  int
	// Config is the seed configuration (the default result).
	Config llm.CallConfig
}

// RequestHook is a waterfall listener of agent/request: it may replace the
// call configuration (provider, model, effort, limits) but not the messages.
type RequestHook func(ctx context.Context, p *RequestPayload, next func(context.Context) (llm.CallConfig, error)) (llm.CallConfig, error)

// StreamHook is a waterfall listener of llm/stream around the provider call.
type StreamHook func(ctx context.Context, req llm.Request, emit llm.Emit, next func(context.Context, llm.Request, llm.Emit) error) error

// RequestErrorPayload is what agent/request-error sees after a failed attempt.
type RequestErrorPayload struct {
	Agent    *Agent
	Turn     int
	Step     int
	Provider string
	Failure  *llm.Failure
	Retry    llm.RetryPolicy
}

// RequestErrorDecision says whether to re-run the request in the same step.
type RequestErrorDecision struct {
	Retry bool
}

// RequestErrorHook is a waterfall listener of agent/request-error.
type RequestErrorHook func(ctx context.Context, p *RequestErrorPayload, next func(context.Context) (RequestErrorDecision, error)) (RequestErrorDecision, error)

// TurnStoppingPayload is what agent/turn-stopping sees.
type TurnStoppingPayload struct {
	Agent *Agent
	Turn  int
}

// TurnStoppingHook is a serial listener of agent/turn-stopping: it runs when
// the turn would close; it may call Agent.Steer to keep the turn going.
type TurnStoppingHook func(ctx context.Context, p *TurnStoppingPayload) error

// Hooks is a set of hook chains. The zero value is ready to use and safe for
// concurrent registration.
type Hooks struct {
	mu           sync.RWMutex
	nextID       int
	preStep      []entry[PreStepHook]
	assemble     []entry[AssembleHook]
	request      []entry[RequestHook]
	stream       []entry[StreamHook]
	requestError []entry[RequestErrorHook]
	turnStopping []entry[TurnStoppingHook]
}

type entry[F any] struct {
	id int
	fn F
}

func add[F any](h *Hooks, list *[]entry[F], fn F) (remove func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextID++
	id := h.nextID
	*list = append(*list, entry[F]{id, fn})
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		for i, e := range *list {
			if e.id == id {
				*list = append((*list)[:i:i], (*list)[i+1:]...)
				return
			}
		}
	}
}

// OnPreStep registers an agent/pre-step listener; the returned func removes it.
func (h *Hooks) OnPreStep(fn PreStepHook) (remove func()) { return add(h, &h.preStep, fn) }

// OnAssemble registers a system-prompt/assemble listener.
func (h *Hooks) OnAssemble(fn AssembleHook) (remove func()) { return add(h, &h.assemble, fn) }

// OnRequest registers an agent/request listener.
func (h *Hooks) OnRequest(fn RequestHook) (remove func()) { return add(h, &h.request, fn) }

// OnStream registers an llm/stream listener.
func (h *Hooks) OnStream(fn StreamHook) (remove func()) { return add(h, &h.stream, fn) }

// OnRequestError registers an agent/request-error listener.
func (h *Hooks) OnRequestError(fn RequestErrorHook) (remove func()) {
	return add(h, &h.requestError, fn)
}

// OnTurnStopping registers an agent/turn-stopping listener.
func (h *Hooks) OnTurnStopping(fn TurnStoppingHook) (remove func()) {
	return add(h, &h.turnStopping, fn)
}

// snapshot returns the functions of list, global hooks before agent hooks.
func snapshot[F any](global, local *Hooks, pick func(*Hooks) []entry[F]) []F {
	var out []F
	for _, h := range []*Hooks{global, local} {
		if h == nil {
			continue
		}
		h.mu.RLock()
		for _, e := range pick(h) {
			out = append(out, e.fn)
		}
		h.mu.RUnlock()
	}
	return out
}

// waterfall runs hooks as a middleware chain around last.
func waterfall[P, R any, H ~func(context.Context, P, func(context.Context) (R, error)) (R, error)](ctx context.Context, name string, hooks []H, p P, last func(context.Context) (R, error)) (R, error) {
	var call func(ctx context.Context, i int) (R, error)
	call = func(ctx context.Context, i int) (r R, err error) {
		if i == len(hooks) {
			return last(ctx)
		}
		defer recoverHook(name, &err)
		return hooks[i](ctx, p, func(ctx context.Context) (R, error) { return call(ctx, i+1) })
	}
	return call(ctx, 0)
}

// recoverHook turns a panicking hook into an error for its turn.
func recoverHook(name string, err *error) {
	if r := recover(); r != nil {
		*err = &HookError{Hook: name, Panic: fmt.Sprint(r), Stack: string(debug.Stack())}
	}
}

// HookError is a hook that panicked.
type HookError struct {
	Hook  string
	Panic string
	Stack string
}

func (e *HookError) Error() string { return fmt.Sprintf("hook %s panicked: %s", e.Hook, e.Panic) }

// runStream runs the llm/stream waterfall around the provider.
func runStream(ctx context.Context, hooks []StreamHook, req llm.Request, emit llm.Emit, last func(context.Context, llm.Request, llm.Emit) error) error {
	var call func(ctx context.Context, i int, req llm.Request, emit llm.Emit) error
	call = func(ctx context.Context, i int, req llm.Request, emit llm.Emit) (err error) {
		if i == len(hooks) {
			return last(ctx, req, emit)
		}
		defer recoverHook("llm/stream", &err)
		return hooks[i](ctx, req, emit, func(ctx context.Context, req llm.Request, emit llm.Emit) error {
			return call(ctx, i+1, req, emit)
		})
	}
	return call(ctx, 0, req, emit)
}

// runTurnStopping runs serial hooks in order; the first error stops the chain.
func runTurnStopping(ctx context.Context, hooks []TurnStoppingHook, p *TurnStoppingPayload) error {
	for _, h := range hooks {
		if err := func() (err error) {
			defer recoverHook("agent/turn-stopping", &err)
			return h(ctx, p)
		}(); err != nil {
			return err
		}
	}
	return nil
}
