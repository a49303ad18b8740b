package service

import (
	"context"
	"math"
	"sync"

	"harness/internal/compact"
	"harness/internal/driver"
	"harness/internal/session"
)

// ContextMeter is how full a session's context window is: the size of its
// next request as compact.Meter measures it (the provider's usage of the
// latest call, plus a heuristic for what came since).
type ContextMeter struct {
	Tokens int64 `json:"tokens"`
	// Window is the route's context window; 0 when unknown.
	Window int64 `json:"window"`
	// Percent is Tokens as a share of Window, to one decimal (0 when the
	// window is unknown).
	Percent float64 `json:"percent"`
}

func contextOf(m compact.Measurement) ContextMeter {
	return ContextMeter{Tokens: m.TotalTokens, Window: m.ContextWindow, Percent: math.Round(m.Percent*10) / 10}
}

// LiveContext measures a session whose agent is loaded; ok is false when it
// is not. It does not authorize: it serves parts that already did (the
// renderer of a subscriber's pushes, the subscribe answer).
func (s *Service) LiveContext(ctx context.Context, id string) (ContextMeter, bool) {
	ag, ok := s.mgr.Lookup(id)
	if !ok {
		return ContextMeter{}, false
	}
	provider, model := s.liveRoute(ctx, ag)
	return s.measure(id, ag.Log(), provider, model), true
}

// liveRoute is the route of the session's next request: the selected one,
// else the one of its latest request, else its stored route.
func (s *Service) liveRoute(ctx context.Context, ag *driver.Agent) (provider, model string) {
	l := ag.Log()
	if sel := l.State().Model; sel != nil {
		rt := s.routeOf(sel.Provider, sel.Model)
		return rt.Provider, rt.Model
	}
	if p, m, ok := compact.Route(l); ok {
		return p, m
	}
	// Only a session that never made a request gets here.
	if row, err := s.store.GetSession(ctx, ag.ID()); err == nil {
		rt := s.routeOf(row.Provider, row.Model)
		return rt.Provider, rt.Model
	}
	return s.providers.Default()
}

// measure folds l with the shared meter; every reader of one log length
// shares one measurement (a meter copies its node prices per call).
func (s *Service) measure(id string, l *session.Log, provider, model string) ContextMeter {
	window := s.compact.Window(s.providers, provider, model)
	if m, ok := s.meters.get(id, l.Len(), window); ok {
		return m
	}
	ms := s.compact.Meter.Measure(l, window)
	m := contextOf(ms)
	s.meters.put(id, ms.LogRevision, window, m)
	return m
}

// meterCacheSize bounds the sessions whose latest figures are kept.
const meterCacheSize = 256

// meterCache keeps each session's latest figures, keyed by log length and
// window (a log only grows, so a length names one content).
type meterCache struct {
	mu  sync.Mutex
	max int
	m   map[string]meterEntry
}

type meterEntry struct {
	length, window int64
	meter          ContextMeter
}

func newMeterCache(n int) *meterCache { return &meterCache{max: n, m: map[string]meterEntry{}} }

func (c *meterCache) get(id string, length, window int64) (ContextMeter, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	if !ok || e.length != length || e.window != window {
		return ContextMeter{}, false
	}
	return e.meter, true
}

func (c *meterCache) put(id string, length, window int64, m ContextMeter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[id]; !ok && len(c.m) >= c.max {
		for k := range c.m { // any entry: the cache only saves work
			delete(c.m, k)
			break
		}
	}
	c.m[id] = meterEntry{length: length, window: window, meter: m}
}
