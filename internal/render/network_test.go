package render_test

import (
	"strings"
	"testing"

	"harness/internal/render"
	"harness/internal/session"
)

// A refused connection shows as one notice line in the transcript.
func TestNetworkRefusedNotice(t *testing.T) {
	t.Parallel()
	r := &run{t: t}
	r.add(session.TypeNetworkRefused, session.NetworkRefused{Host: "127.0.0.1", Port: 5432, Address: "127.0.0.1:5432", Reason: "loopback"})
	r.add(session.TypeNetworkRefused, session.NetworkRefused{Host: "db.internal", Port: 6379, Address: "10.0.0.5:6379", Reason: "private"})
	p := newLive(nil, 0, render.ProjectionOptions{})
	got := live(t, p, r.evs[0], owner) + live(t, p, r.evs[1], owner)
	for _, want := range []string{"network: refused 127.0.0.1:5432 (loopback)", "network: refused db.internal:6379 at 10.0.0.5:6379 (private)"} {
		if !strings.Contains(got, want) {
			t.Errorf("the fragment lacks %q:\n%s", want, got)
		}
	}
}
