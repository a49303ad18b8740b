package app

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"harness/internal/session"
	"harness/internal/testkit"
)

// TestLiveViewsArePure: the live projection the app wires is a function of
// the events. A recorded log projected twice, the second time later and
// with the database stalled (every connection of both pools held, so any
// read waits), gives the same bytes for every viewer class, and the second
// projection finishes: nothing in it waits on the store.
func TestLiveViewsArePure(t *testing.T) {
	t.Parallel()
	a, err := New(t.Context(), testkit.Logger(), testConfig(t), Options{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	// The render fixture holds user messages, answers, tool results, two
	// compactions and the route's window: every kind of meter event.
	evs := readLog(t, filepath.Join("..", "render", "testdata", "sessions", "compaction.jsonl"))
	l, err := session.Load(session.Header{ID: "s-pure"}, evs, session.Options{})
	if err != nil {
		t.Fatal(err)
	}

	first := a.projectAll(t, l, evs)
	stallStore(t, a)
	done := make(chan []string, 1)
	go func() { done <- a.projectAll(t, l, evs) }()
	var second []string
	select {
	case second = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the projection waits on the stalled store")
	}

	if len(second) != len(first) {
		t.Fatalf("%d fragments, then %d", len(first), len(second))
	}
	meters := 0
	for i := range first {
		if first[i] != second[i] {
			t.Fatalf("fragment %d differs:\n%s\nthen\n%s", i, first[i], second[i])
		}
		if strings.Contains(first[i], `id="ctx-meter"`) {
			meters++
		}
	}
	if meters == 0 {
		t.Fatal("no fragment carries the context meter: the test proves nothing about it")
	}
}

// projectAll projects evs with the app's live projection and returns every
// event's fragment for the owner, another reader and a share link.
func (a *App) projectAll(t *testing.T, l *session.Log, evs []session.Event) []string {
	p := a.projections("s-pure", l, 0)
	var out []string
	for _, ev := range evs {
		if err := p.Apply(ev); err != nil {
			t.Errorf("apply seq %d: %v", ev.Seq, err)
			return nil
		}
		for _, c := range []struct {
			canAnswer bool
			viewer    string
		}{{true, "u-ada"}, {false, "u-vic"}, {false, ""}} {
			h, err := p.Fragment(c.canAnswer, c.viewer)
			if err != nil {
				t.Errorf("fragment seq %d: %v", ev.Seq, err)
				return nil
			}
			out = append(out, h)
		}
	}
	return out
}

// stallStore holds every connection of the app's reader and writer pools
// until the test ends, and checks that a read now waits.
func stallStore(t *testing.T, a *App) {
	t.Helper()
	for _, g := range []interface{ DB() (*sql.DB, error) }{a.Store.DB.R, a.Store.DB.W} {
		db, err := g.DB()
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		conn, err := db.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := a.Store.GetSession(ctx, "s-pure"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a read on the stalled store returned %v, want it to wait until its deadline", err)
	}
}

func readLog(t *testing.T, path string) []session.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []session.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		ev, err := session.UnmarshalEvent(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
