package app

import (
	"context"
	"testing"
	"time"

	"harness/internal/testkit"
)

// Closing the app twice (a shutdown path and a deferred close) closes it
// once: the second call returns the first result and panics on nothing.
func TestCloseTwice(t *testing.T) {
	t.Parallel()
	a, err := New(t.Context(), testkit.Logger(), testConfig(t), Options{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Close(ctx); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := a.Manager.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown after Close: %v", err)
	}
}
