package session

import (
	"errors"
	"slices"
	"testing"
)

// A follower log ingests the events another log appended, with their seq
// and time, publishes them, and refuses gaps, repeats and invalid events.
func TestIngestMirrorsAnotherLog(t *testing.T) {
	t.Parallel()
	src := newTestLog()
	s := newScript(t, src)
	s.startTurn()
	s.startStep()
	s.user("u", "hi")

	mirror, err := Load(src.Header(), src.Events(0, 1), Options{Trusted: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	_, cancel := mirror.Subscribe(func(ev Event) { got = append(got, ev.Seq) })
	defer cancel()
	for _, ev := range src.Events(1, src.Len()) {
		if err := mirror.Ingest(ev); err != nil {
			t.Fatalf("ingest seq %d: %v", ev.Seq, err)
		}
	}
	if !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("published %v, want [1 2]", got)
	}
	for seq := range src.Len() {
		a, _ := src.Event(seq)
		b, _ := mirror.Event(seq)
		if a.Time != b.Time || a.Type != b.Type || string(a.Data) != string(b.Data) {
			t.Fatalf("seq %d differs: %+v vs %+v", seq, a, b)
		}
	}
	if mirror.State().TurnOpen != src.State().TurnOpen || len(mirror.History()) != len(src.History()) {
		t.Fatalf("mirror's fold differs from the source's")
	}

	last, _ := src.Event(src.Len() - 1)
	var se *Error
	if err := mirror.Ingest(last); !errors.As(err, &se) || se.Code != CodeNotContiguous {
		t.Fatalf("repeated seq: %v, want NOT_CONTIGUOUS", err)
	}
	gap := last
	gap.Seq = mirror.Len() + 1
	if err := mirror.Ingest(gap); !errors.As(err, &se) || se.Code != CodeNotContiguous {
		t.Fatalf("gap: %v, want NOT_CONTIGUOUS", err)
	}
	bad := Event{Seq: mirror.Len(), Type: "no/such", Data: []byte(`{}`)}
	if err := mirror.Ingest(bad); err == nil {
		t.Fatal("an unknown, non-ignorable type was ingested")
	}
	if mirror.Len() != src.Len() {
		t.Fatalf("refused events changed the mirror: len %d, want %d", mirror.Len(), src.Len())
	}
}
