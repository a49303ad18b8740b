package testkit

import (
	"context"
	"testing"
	"time"

	"harness/internal/driver"
)

// ShutdownManager stops m gracefully, as a server stop does (running turns
// end aborted, queued input stays stored), and fails t if it does not finish
// within 10 s.
func ShutdownManager(t testing.TB, m *driver.Manager) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}
