package llm

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// stubProvider streams a fixed chunk list, then returns err.
type stubProvider struct {
	info   ProviderInfo
	chunks []Chunk
	err    error
	// block makes Stream wait for ctx before returning ctx's error.
	block bool
}

func (s *stubProvider) Info() ProviderInfo { return s.info }

func (s *stubProvider) Stream(ctx context.Context, _ Request, emit Emit) error {
	for _, c := range s.chunks {
		if err := emit(c); err != nil {
			return err
		}
	}
	if s.block {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.err
}

func named(name, model string) *stubProvider {
	return &stubProvider{info: ProviderInfo{Name: name, DefaultModel: model}}
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	if p, m := r.Default(); p != "" || m != "" {
		t.Fatalf("empty default = %q %q", p, m)
	}
	if err := r.Register(named("deepseek", "deepseek-v4-flash")); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(named("demo", "demo")); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(named("demo", "other")); err == nil {
		t.Fatal("duplicate name accepted")
	}
	if err := r.Register(named("", "x")); err == nil {
		t.Fatal("empty name accepted")
	}
	if err := r.Register(nil); err == nil {
		t.Fatal("nil provider accepted")
	}
	if p, m := r.Default(); p != "deepseek" || m != "deepseek-v4-flash" {
		t.Fatalf("implicit default = %q %q", p, m)
	}
	r.SetDefault("demo", "")
	if p, m := r.Default(); p != "demo" || m != "demo" {
		t.Fatalf("default with provider model = %q %q", p, m)
	}
	r.SetDefault("deepseek", "deepseek-v4-pro")
	if p, m := r.Default(); p != "deepseek" || m != "deepseek-v4-pro" {
		t.Fatalf("explicit default = %q %q", p, m)
	}
	if _, ok := r.Get("missing"); ok {
		t.Fatal("Get(missing) found something")
	}
	if p, ok := r.Get("demo"); !ok || p.Info().DefaultModel != "demo" {
		t.Fatal("Get(demo) failed")
	}
	list := r.List()
	if len(list) != 2 || list[0].Name != "deepseek" || list[1].Name != "demo" {
		t.Fatalf("list = %+v", list)
	}
}

func TestRegistryConcurrent(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if err := r.Register(named(fmt.Sprintf("p%d", i), "m")); err != nil {
				t.Error(err)
			}
			r.List()
			r.Default()
			r.Get("p0")
			r.SetDefault("p1", "m")
		})
	}
	wg.Wait()
	if got := len(r.List()); got != 20 {
		t.Fatalf("registered %d, want 20", got)
	}
}
