package compact_test

import (
	"context"
	"testing"

	"harness/internal/compact"
	"harness/internal/llm"
)

// route is a minimal provider that only describes itself.
type route struct{ info llm.ProviderInfo }

func (r route) Info() llm.ProviderInfo { return r.info }
func (route) Stream(_ context.Context, _ llm.Request, _ llm.Emit) error {
	return nil
}

func TestOptionsWindow(t *testing.T) {
	t.Parallel()
	reg := llm.NewRegistry()
	if err := reg.Register(route{llm.ProviderInfo{Name: "p", Models: []llm.ModelInfo{{ID: "big", ContextWindow: 1_000_000}, {ID: "none"}}}}); err != nil {
		t.Fatal(err)
	}
	opts := compact.Options{ContextWindow: map[string]int64{"p/small": 2000}}
	tests := []struct {
		provider, model string
		want            int64
	}{
		{"p", "big", 1_000_000},
		{"p", "small", 2000},         // override, not in the catalog
		{"p", "unlisted", 1_000_000}, // unknown ids take the route's first entry
		{"p", "none", 0},
		{"q", "big", 0},
	}
	for _, tt := range tests {
		if got := opts.Window(reg, tt.provider, tt.model); got != tt.want {
			t.Errorf("Window(%s/%s) = %d, want %d", tt.provider, tt.model, got, tt.want)
		}
	}
}

func TestOptionsDefaultsAndValidate(t *testing.T) {
	t.Parallel()
	d := compact.DefaultOptions()
	if d.ThresholdRatio != 0.8 || d.RetainRatio != 0.16 || d.MaxSummaryTokens != 8192 || d.CompactionRetries != 1 ||
		d.MaxOverflowRetries != 1 || d.Pruner.ThresholdChars != 8192 || d.Pruner.HeadChars != 4096 || d.Pruner.TailChars != 1024 ||
		d.Meter == nil || d.Logger == nil {
		t.Fatalf("defaults %+v", d)
	}
	tests := []struct {
		name string
		opts compact.Options
		ok   bool
	}{
		{"zero", compact.Options{}, true},
		{"pruner too small", compact.Options{Pruner: compact.PrunerOptions{ThresholdChars: 1000, HeadChars: 900, TailChars: 100}}, false},
		{"bad window", compact.Options{ContextWindow: map[string]int64{"p/m": 0}}, false},
	}
	for _, tt := range tests {
		if err := tt.opts.Validate(); (err == nil) != tt.ok {
			t.Errorf("%s: Validate() = %v", tt.name, err)
		}
	}
}
