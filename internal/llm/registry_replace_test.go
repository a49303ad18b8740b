package llm_test

import (
	"context"
	"testing"

	"harness/internal/llm"
)

type namedProvider struct{ info llm.ProviderInfo }

func (p namedProvider) Info() llm.ProviderInfo { return p.info }
func (namedProvider) Stream(context.Context, llm.Request, llm.Emit) error {
	return nil
}

func TestRegistryReplaceUnregister(t *testing.T) {
	t.Parallel()
	r := llm.NewRegistry()
	a := namedProvider{llm.ProviderInfo{Name: "a", DefaultModel: "a1"}}
	b := namedProvider{llm.ProviderInfo{Name: "b", DefaultModel: "b1"}}
	if err := r.Register(a); err != nil {
		t.Fatal(err)
	}
	if err := r.Replace(b); err != nil {
		t.Fatal(err)
	}
	if err := r.Replace(namedProvider{llm.ProviderInfo{Name: "a", DefaultModel: "a2"}}); err != nil {
		t.Fatal(err)
	}
	list := r.List()
	if len(list) != 2 || list[0].Name != "a" || list[0].DefaultModel != "a2" || list[1].Name != "b" {
		t.Fatalf("list after replace = %+v", list)
	}
	r.SetDefault("b", "")
	if p, m := r.Default(); p != "b" || m != "b1" {
		t.Fatalf("default = %s/%s", p, m)
	}
	if !r.Unregister("b") || r.Unregister("b") {
		t.Fatal("unregister b: want true then false")
	}
	if _, ok := r.Get("b"); ok {
		t.Fatal("b still registered")
	}
	if p, m := r.Default(); p != "a" || m != "a2" {
		t.Fatalf("default after removing it = %s/%s, want the first route", p, m)
	}
	if err := r.Replace(nil); err == nil {
		t.Fatal("replace(nil) accepted")
	}
}
