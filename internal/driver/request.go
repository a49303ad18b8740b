package driver

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"harness/internal/llm"
	"harness/internal/session"
)

// buildRequest derives the request of one attempt from the log: messages
// from DeriveMessages, system and tools from the header it logs. Model-visible
// means logged: the request is exactly what the log reconstructs.
func (a *Agent) buildRequest(ctx context.Context, turn, step int, system string, schemas []llm.ToolSchema) (llm.Request, llm.Provider, llm.ProviderInfo, error) {
	seed := a.seedConfig()
	p := &RequestPayload{Agent: a, Turn: turn, Step: step, Config: seed}
	hooks := snapshot(a.m.hooks, &a.hooks, func(h *Hooks) []entry[RequestHook] { return h.request })
	cfg, err := waterfall(ctx, "agent/request", hooks, p, func(context.Context) (llm.CallConfig, error) { return seed, nil })
	if err != nil {
		return llm.Request{}, nil, llm.ProviderInfo{}, err
	}
	if cfg.Provider == "" || cfg.Model == "" {
		return llm.Request{}, nil, llm.ProviderInfo{}, &llm.Failure{Code: llm.CodeNoProvider,
			Message: "no provider/model configured for this session"}
	}
	prov, ok := a.m.providers.Get(cfg.Provider)
	if !ok {
		return llm.Request{}, nil, llm.ProviderInfo{}, &llm.Failure{Code: llm.CodeNoProvider,
			Message: fmt.Sprintf("provider %q is not configured", cfg.Provider)}
	}
	info := prov.Info()
	model := info.Model(cfg.Model)

	var defaults session.AdapterDefaults
	if cfg.MaxTokens == 0 && model.DefaultMaxTokens > 0 {
		cfg.MaxTokens = model.DefaultMaxTokens
		defaults.MaxTokens = true
	}
	if cfg.ReasoningEffort == "" && model.DefaultEffort != "" {
		cfg.ReasoningEffort = model.DefaultEffort
		defaults.ReasoningEffort = true
	}
	if cfg.ReasoningEffort != "" && len(model.Efforts) > 0 && !hasEffort(model.Efforts, cfg.ReasoningEffort) {
		return llm.Request{}, nil, llm.ProviderInfo{}, &llm.Failure{Code: llm.CodeUnsupportedEffort,
			Message: fmt.Sprintf("model %s does not support reasoning effort %q", cfg.Model, cfg.ReasoningEffort)}
	}

	header := session.EpochHeader{Config: cfg, System: system, Tools: schemas}
	if defaults != (session.AdapterDefaults{}) {
		header.AdapterDefaults = &defaults
	}
	if err := a.logHeader(header); err != nil {
		return llm.Request{}, nil, llm.ProviderInfo{}, err
	}
	if err := a.logRequestContext(cfg, model.ContextWindow); err != nil {
		return llm.Request{}, nil, llm.ProviderInfo{}, err
	}

	history, wire := a.log.HistoryWire()
	req := llm.Request{
		CallConfig:  cfg,
		System:      system,
		Tools:       schemas,
		Messages:    history,
		Wire:        wire,
		SessionID:   a.id,
		Attachments: a.m.opts.Attachments,
	}
	if a.m.opts.VerifyRequests {
		if err := a.verifyRequest(req); err != nil {
			return llm.Request{}, nil, llm.ProviderInfo{}, err
		}
	}
	return req, prov, info, nil
}

// seedConfig is the configuration a request starts from: the last logged
// header's config minus adapter-filled fields, else the session's selection;
// a model/effort selection then sets the effort.
func (a *Agent) seedConfig() llm.CallConfig {
	st := a.log.State()
	route := a.defaults
	if sel := st.Model; sel != nil {
		route.Provider, route.Model = sel.Provider, sel.Model
	}
	if route.Provider == "" {
		route.Provider, route.Model = a.m.providers.Default()
	}
	cfg := route
	if h, ok := a.log.RequestHeader(); ok && h.Config.Provider == route.Provider && h.Config.Model == route.Model {
		cfg = h.Config
		if h.AdapterDefaults != nil {
			if h.AdapterDefaults.MaxTokens {
				cfg.MaxTokens = 0
			}
			if h.AdapterDefaults.ReasoningEffort {
				cfg.ReasoningEffort = ""
			}
		}
	}
	if sel := st.Effort; sel != nil {
		// The person's choice wins over an effort carried in the header;
		// "" (or one this model does not list) leaves it to the model's
		// default, so a model switch never fails a turn on the effort.
		cfg.ReasoningEffort = ""
		if a.effortSupported(cfg.Provider, cfg.Model, sel.Effort) {
			cfg.ReasoningEffort = sel.Effort
		}
	}
	return cfg
}

// effortSupported reports whether the route's model takes effort: a model
// that lists no efforts takes any.
func (a *Agent) effortSupported(provider, model string, effort llm.Effort) bool {
	if effort == "" {
		return false
	}
	p, ok := a.m.providers.Get(provider)
	if !ok {
		return true // the request fails on the route, not on the effort
	}
	efforts := p.Info().Model(model).Efforts
	return len(efforts) == 0 || hasEffort(efforts, effort)
}

func hasEffort(list []llm.Effort, e llm.Effort) bool {
	for _, x := range list {
		if x == e {
			return true
		}
	}
	return false
}

// logHeader appends request/header: a full snapshot on this instance's first
// request (initial, or resume when the log already has one), then only when
// the canonical header changes.
func (a *Agent) logHeader(h session.EpochHeader) error {
	prev, had := a.log.RequestHeader()
	var reason session.HeaderReason
	switch {
	case !a.headerLogged && !had:
		reason = session.HeaderInitial
	case !a.headerLogged:
		reason = session.HeaderResume
	case !sameHeader(prev, h):
		reason = session.HeaderChange
	default:
		return nil
	}
	if _, err := a.log.Append(session.TypeRequestHeader, session.RequestHeader{Header: h, Reason: reason}); err != nil {
		return err
	}
	a.headerLogged = true
	return nil
}

func sameHeader(x, y session.EpochHeader) bool {
	bx, err1 := json.Marshal(x)
	by, err2 := json.Marshal(y)
	return err1 == nil && err2 == nil && string(bx) == string(by)
}

// logRequestContext appends request/context when the route or its capacity
// changed since the last record.
func (a *Agent) logRequestContext(cfg llm.CallConfig, window int64) error {
	rc := session.RequestContext{Provider: cfg.Provider, Model: cfg.Model, ContextWindow: window}
	if a.lastContext == nil {
		a.lastContext = lastRequestContext(a.log)
	}
	if a.lastContext != nil && *a.lastContext == rc {
		return nil
	}
	if _, err := a.log.Append(session.TypeRequestContext, rc); err != nil {
		return err
	}
	a.lastContext = &rc
	return nil
}

func lastRequestContext(l *session.Log) *session.RequestContext {
	for seq := l.Len() - 1; seq >= 0; seq-- {
		ev, ok := l.Event(seq)
		if !ok || ev.Type != session.TypeRequestContext {
			continue
		}
		rc, err := session.Decode[session.RequestContext](ev)
		if err != nil {
			return nil
		}
		return &rc
	}
	return nil
}

// verifyRequest re-derives the request from a fresh load of the raw log and
// compares: anything model-visible that is not logged fails the turn. Tests
// run with it on.
func (a *Agent) verifyRequest(req llm.Request) error {
	events := a.log.Events(0, a.log.Len())
	fresh, err := session.Load(a.log.Header(), events, session.Options{})
	if err != nil {
		return &llm.Failure{Code: CodeRequestInvariant, Message: fmt.Sprintf("log does not reload: %v", err)}
	}
	want := fresh.DeriveMessages()
	if !jsonEqual(want, req.Messages) {
		return &llm.Failure{Code: CodeRequestInvariant, Message: "request messages differ from the log's derived messages"}
	}
	h, ok := fresh.RequestHeader()
	if !ok {
		return &llm.Failure{Code: CodeRequestInvariant, Message: "request sent without a logged header"}
	}
	if h.System != req.System || !jsonEqual(h.Tools, req.Tools) || !reflect.DeepEqual(h.Config, req.CallConfig) {
		return &llm.Failure{Code: CodeRequestInvariant, Message: "request header differs from the logged header"}
	}
	return nil
}

func jsonEqual(x, y any) bool {
	bx, err1 := json.Marshal(x)
	by, err2 := json.Marshal(y)
	return err1 == nil && err2 == nil && string(bx) == string(by)
}
