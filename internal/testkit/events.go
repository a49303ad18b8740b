package testkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"harness/client"
	"harness/internal/models"
	"harness/internal/session"
)

// CheckLog asserts the log's relational invariants and that the store holds
// exactly the in-memory log of session id, event for event, byte for byte
// (after flushing the session's pending writes).
func CheckLog(t testing.TB, store *models.Store, l *session.Log, id string) {
	t.Helper()
	events := l.Events(0, l.Len())
	if err := session.CheckInvariants(events); err != nil {
		t.Fatalf("invariants: %v\n%s", err, Dump(events))
	}
	if err := store.W.Flush(t.Context(), id); err != nil {
		t.Fatalf("flush: %v", err)
	}
	stored, err := store.EventsSince(t.Context(), id, -1, 0)
	if err != nil {
		t.Fatalf("read the stored log: %v", err)
	}
	if len(stored) != len(events) {
		t.Fatalf("store has %d events, log %d", len(stored), len(events))
	}
	for i := range events {
		x, _ := session.MarshalEvent(events[i])
		y, _ := session.MarshalEvent(stored[i])
		if string(x) != string(y) {
			t.Fatalf("stored event %d differs:\n%s\n%s", i, x, y)
		}
	}
}

// chunkRun stands for a run of assistant/chunk events in Types.
const chunkRun = "assistant/chunk*"

// Types lists the event types, each run of assistant/chunk folded to one
// "assistant/chunk*", so sequences read like the spec.
func Types(events []session.Event) []string {
	var out []string
	for _, ev := range events {
		t := string(ev.Type)
		if ev.Type == session.TypeAssistantChunk {
			if len(out) > 0 && out[len(out)-1] == chunkRun {
				continue
			}
			t = chunkRun
		}
		out = append(out, t)
	}
	return out
}

// Dump prints events one a line for a failure message: seq, type, surface
// op and the start of the data; chunks are left out.
func Dump(events []session.Event) string {
	var sb strings.Builder
	for _, ev := range events {
		if ev.Type == session.TypeAssistantChunk {
			continue
		}
		d := string(ev.Data)
		if len(d) > 300 {
			d = d[:300] + "…"
		}
		op := ""
		if ev.SurfaceOp != nil {
			b, _ := json.Marshal(ev.SurfaceOp)
			op = " " + string(b)
		}
		fmt.Fprintf(&sb, "%4d %-22s%s %s\n", ev.Seq, ev.Type, op, d)
	}
	return sb.String()
}

// Find decodes the data of every event of type typ.
func Find[T any](t testing.TB, events []session.Event, typ session.Type) []T {
	t.Helper()
	var out []T
	for _, ev := range events {
		if ev.Type == typ {
			v, err := session.Decode[T](ev)
			if err != nil {
				t.Fatalf("decode %s event %d: %v", typ, ev.Seq, err)
			}
			out = append(out, v)
		}
	}
	return out
}

// SameStream reports how a client's stream of events differs from the
// stored log (nil when it holds the same events, in order, each once, with
// the same seq, type, time and data).
func SameStream(got, want []client.Event) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d events, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Seq != w.Seq || g.Type != w.Type || g.Time != w.Time || !bytes.Equal(g.Data, w.Data) {
			return fmt.Errorf("event %d: got seq %d %s, want seq %d %s", i, g.Seq, g.Type, w.Seq, w.Type)
		}
	}
	return nil
}
