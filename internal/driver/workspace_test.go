package driver_test

import (
	"errors"
	"sync"
	"testing"

	"harness/internal/driver"
	"harness/internal/session"
)

// A workspace settles once: of several repairs racing to log its outcome,
// one logs it and the others are told it is settled.
func TestWorkspaceSettlesOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script())
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		logged  int
		settled int
	)
	for range 8 {
		wg.Go(func() {
			err := h.agent.NoteWorkspace(h.ctx, session.TypeWorkspaceFailed, session.WorkspaceFailed{Kind: "fork", Error: "cut short", Interrupted: true})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				logged++
			case errors.Is(err, driver.ErrWorkspaceSettled):
				settled++
			default:
				t.Errorf("NoteWorkspace: %v", err)
			}
		})
	}
	wg.Wait()
	if logged != 1 || settled != 7 {
		t.Fatalf("%d logged, %d told settled; want 1 and 7", logged, settled)
	}
	if n := len(find[session.WorkspaceFailed](h, session.TypeWorkspaceFailed)); n != 1 {
		t.Fatalf("%d workspace/failed events, want 1", n)
	}
}
