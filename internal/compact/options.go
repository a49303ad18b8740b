package compact

import (
	"fmt"
	"log/slog"
	"unicode/utf8"

	"harness/internal/llm"
	"harness/internal/session"
)

// Defaults of upstream §6.2 and §6.5.
const (
	DefaultThresholdRatio     = 0.8
	DefaultRetainRatio        = 0.16
	DefaultMaxSummaryTokens   = 8192
	DefaultCompactionRetries  = 1
	DefaultMaxOverflowRetries = 1
	DefaultPruneThreshold     = 8192
	DefaultPruneHead          = 4096
	DefaultPruneTail          = 1024
)

// Options configure compaction. The zero value means the defaults.
type Options struct {
	// ThresholdRatio of the context window at which pressure compaction
	// runs (default 0.8).
	ThresholdRatio float64
	// RetainRatio of the window kept verbatim at the tail by pressure
	// compaction (default 0.16); it must be below ThresholdRatio.
	RetainRatio float64
	// MaxSummaryTokens caps the summary call (default 8192).
	MaxSummaryTokens int
	// CompactionRetries is how many more summaries one pressure check may
	// write when the first leaves the session above the threshold. 0 means
	// the default 1; a negative value means none.
	CompactionRetries int
	// MaxOverflowRetries is how many context-overflow recoveries one step
	// may retry. 0 means the default 1; a negative value disables overflow
	// recovery.
	MaxOverflowRetries int
	// ContextWindow overrides the route metadata, keyed "provider/model".
	ContextWindow map[string]int64
	// Pruner tunes tool-result pruning.
	Pruner PrunerOptions
	// Meter is shared with other readers (the UI); nil means a private one.
	Meter *Meter
	// Logger receives warnings (a compaction that could not relieve
	// pressure, a route without a context window); nil discards them.
	Logger *slog.Logger
	// Providers are the model routes a manual compaction (Compact) calls;
	// Install uses the manager's own and ignores this field.
	Providers *llm.Registry
	// CommandID is recorded as sourceCommandId by a manual compaction, so a
	// client can correlate its /compact command.
	CommandID string
}

// PrunerOptions tune the tool-result pruner (upstream §6.5). Sizes are
// Unicode code points of a result's text blocks; head + marker + tail must
// fit in the threshold.
type PrunerOptions struct {
	Disabled       bool
	ThresholdChars int // results longer than this are pruned (default 8192)
	HeadChars      int // kept from the start (default 4096)
	TailChars      int // kept from the end (default 1024)
}

func (o Options) withDefaults() Options {
	if o.ThresholdRatio <= 0 || o.ThresholdRatio > 1 {
		o.ThresholdRatio = DefaultThresholdRatio
	}
	if o.RetainRatio <= 0 || o.RetainRatio >= o.ThresholdRatio {
		o.RetainRatio = min(DefaultRetainRatio, o.ThresholdRatio/2)
	}
	if o.MaxSummaryTokens <= 0 {
		o.MaxSummaryTokens = DefaultMaxSummaryTokens
	}
	o.CompactionRetries = count(o.CompactionRetries, DefaultCompactionRetries)
	o.MaxOverflowRetries = count(o.MaxOverflowRetries, DefaultMaxOverflowRetries)
	if o.Meter == nil {
		o.Meter = NewMeter()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Pruner = o.Pruner.withDefaults()
	return o
}

// count maps 0 to def and negatives to 0.
func count(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

func (p PrunerOptions) withDefaults() PrunerOptions {
	if p.ThresholdChars <= 0 {
		p.ThresholdChars = DefaultPruneThreshold
	}
	if p.HeadChars <= 0 {
		p.HeadChars = DefaultPruneHead
	}
	if p.TailChars <= 0 {
		p.TailChars = DefaultPruneTail
	}
	return p
}

// Validate reports settings that cannot work together.
func (o Options) Validate() error {
	o = o.withDefaults()
	p := o.Pruner
	if p.HeadChars+utf8.RuneCountInString(PruneMarker)+p.TailChars > p.ThresholdChars {
		return fmt.Errorf("compact: pruner head %d + marker + tail %d exceed the threshold %d", p.HeadChars, p.TailChars, p.ThresholdChars)
	}
	for k, v := range o.ContextWindow {
		if v <= 0 {
			return fmt.Errorf("compact: context window of %s must be positive, got %d", k, v)
		}
	}
	return nil
}

// Window returns the context window of a route: the configured override,
// else the route's model metadata; 0 when unknown.
func (o Options) Window(reg *llm.Registry, provider, model string) int64 {
	if w, ok := o.ContextWindow[provider+"/"+model]; ok && w > 0 {
		return w
	}
	if reg == nil {
		return 0
	}
	p, ok := reg.Get(provider)
	if !ok {
		return 0
	}
	return p.Info().Model(model).ContextWindow
}

// Route returns the provider and model of a session's latest logged request.
func Route(l *session.Log) (provider, model string, ok bool) {
	h, ok := l.RequestHeader()
	if !ok || h.Config.Provider == "" || h.Config.Model == "" {
		return "", "", false
	}
	return h.Config.Provider, h.Config.Model, true
}

// thresholds are a route's pressure figures in tokens.
type thresholds struct {
	window    int64
	threshold int64
	retain    int64
}

func (o Options) thresholds(window int64) thresholds {
	return thresholds{
		window:    window,
		threshold: int64(float64(window) * o.ThresholdRatio),
		retain:    int64(float64(window) * o.RetainRatio),
	}
}
