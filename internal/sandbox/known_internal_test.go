package sandbox

import "testing"

// TestKnownDoesNotWait: while the probe runs Known says so at once; after,
// it is Status.
func TestKnownDoesNotWait(t *testing.T) {
	t.Parallel()
	s := &Sandbox{ready: make(chan struct{}), status: Status{Active: true, Bwrap: true}}
	if _, ok := s.Known(); ok {
		t.Fatal("known before the probe decided")
	}
	close(s.ready)
	st, ok := s.Known()
	if !ok || !st.Active || !st.Bwrap {
		t.Fatalf("after the probe: %+v, %v", st, ok)
	}
}
