package render_test

import (
	"strings"
	"testing"

	"harness/internal/render"
	"harness/internal/session"
)

// TestLiveFragmentsDependOnTheEventsOnly: a live fragment is a function of
// the events up to it, not of when it is built. Each fixture is projected
// with the meter on three ways: while its log grows event by event, after
// the whole log is written (a projector that lags), and from a projection
// primed halfway into the written log (a topic opened late); every event's
// fragment is the same bytes for every viewer class.
func TestLiveFragmentsDependOnTheEventsOnly(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"demo-tools", "failures", "compaction", "subagent", "subagent-child"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			evs := loadFixture(t, name)
			opts := render.ProjectionOptions{Meter: true}
			growing, err := session.Load(session.Header{ID: "fixture"}, nil, session.Options{})
			if err != nil {
				t.Fatal(err)
			}
			p := newLive(growing, 0, opts)
			var atTheEvent [][]string
			for _, ev := range evs {
				if err := growing.Ingest(ev); err != nil {
					t.Fatalf("seq %d: %v", ev.Seq, err)
				}
				atTheEvent = append(atTheEvent, fragments(t, p, ev))
			}

			written := fixtureLog(t, evs)
			half := int64(len(evs) / 2)
			lagging, late := newLive(written, 0, opts), newLive(written, half, opts)
			meters := 0
			for i, ev := range evs {
				for _, c := range []struct {
					name string
					p    *render.Projection
				}{{"lagging", lagging}, {"opened late", late}} {
					if c.p == late && ev.Seq < half {
						continue
					}
					got := fragments(t, c.p, ev)
					for k := range got {
						if got[k] != atTheEvent[i][k] {
							t.Fatalf("seq %d %s, %s, class %d:\n%s\nwhile the log grew:\n%s", ev.Seq, ev.Type, c.name, k, got[k], atTheEvent[i][k])
						}
					}
				}
				if containsMeter(atTheEvent[i][0]) {
					meters++
				}
			}
			if meters == 0 {
				t.Fatal("no fragment carries the meter")
			}
		})
	}
}

// fragments applies ev and returns its fragment for each viewer class.
func fragments(t *testing.T, p *render.Projection, ev session.Event) []string {
	t.Helper()
	var out []string
	for i, c := range []class{owner, reader, shareLink} {
		if i == 0 {
			out = append(out, live(t, p, ev, c))
			continue
		}
		h, err := p.Fragment(c.canAnswer, c.viewerID)
		if err != nil {
			t.Fatalf("seq %d: %v", ev.Seq, err)
		}
		out = append(out, h)
	}
	return out
}

func containsMeter(h string) bool { return strings.Contains(h, `id="ctx-meter"`) }
