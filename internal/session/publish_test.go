package session

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"harness/internal/llm"
)

func TestSubscribeDeliversFromNext(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	s := newScript(t, l)
	s.startTurn()
	var got []int64
	next, cancel := l.Subscribe(func(ev Event) { got = append(got, ev.Seq) })
	if next != 1 {
		t.Fatalf("next %d, want 1", next)
	}
	s.startStep()
	s.user("u", "hi")
	cancel()
	cancel() // idempotent
	s.endStep()
	if !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("got %v, want [1 2] (nothing after cancel)", got)
	}
	if n, c := l.Subscribe(nil); n != l.Len() {
		t.Fatalf("nil subscriber next %d", n)
	} else {
		c()
	}
}

func TestSubscriberGetsCopies(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	s := newScript(t, l)
	l.Subscribe(func(ev Event) {
		if ev.SourceEventSeqs != nil {
			ev.SourceEventSeqs[0] = 99
			ev.SurfaceOp.Op = OpReplace
		}
	})
	var second []int64
	l.Subscribe(func(ev Event) { second = ev.SourceEventSeqs })
	s.startTurn()
	s.startStep()
	a := s.assistant("a", llm.Text("x"))
	if stored, _ := l.Event(a.Seq); stored.SourceEventSeqs[0] != a.Seq-1 || stored.SurfaceOp.Op != OpAppend {
		t.Fatal("a subscriber changed the stored event")
	}
	if second[0] != a.Seq-1 {
		t.Fatal("a subscriber's change reached another subscriber")
	}
}

func TestSinkSeesEveryAppendInOrder(t *testing.T) {
	t.Parallel()
	var sunk []int64
	l := New(Header{}, Options{Sink: func(ev Event) { sunk = append(sunk, ev.Seq) }})
	s := newScript(t, l)
	s.toolTurn(1)
	if _, err := l.Append(TypeTurnStart, nil); err == nil {
		t.Fatal("nil data accepted")
	}
	if want := seqs(l.Events(0, l.Len())); !slices.Equal(sunk, want) {
		t.Fatalf("sink %v, want %v", sunk, want)
	}
}

// TestConcurrentAppendSubscribeRead runs appenders, late subscribers and
// readers at once (meant for -race). Every subscriber must see a gap-free,
// increasing run of seqs starting exactly at its next and ending at the last
// event.
func TestConcurrentAppendSubscribeRead(t *testing.T) {
	t.Parallel()
	const (
		appenders   = 8
		perAppender = 150
		subscribers = 12
		readers     = 4
	)
	l := newTestLog()
	type sub struct {
		mu   sync.Mutex
		next int64
		seen []int64
	}
	subs := make([]*sub, subscribers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range appenders {
		wg.Go(func() {
			<-start
			for k := range perAppender {
				var err error
				if k%10 == 0 {
					_, err = l.AppendSurface(TypeUserMessage, userMsg(fmt.Sprintf("m-%d-%d", i, k), "hi"), Append(), nil)
				} else {
					_, err = l.Append(TypeToolOutput, ToolOutput{CallID: fmt.Sprint(i), Stream: "stdout", Text: "x"})
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range subscribers {
		s := &sub{}
		subs[i] = s
		wg.Go(func() {
			<-start
			for range i * 20 { // subscribe at different points of the stream
				l.Len()
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			s.next, _ = l.Subscribe(func(ev Event) {
				s.mu.Lock()
				s.seen = append(s.seen, ev.Seq)
				s.mu.Unlock()
			})
		})
	}
	for range readers {
		wg.Go(func() {
			<-start
			for range 200 {
				n := l.Len()
				evs := l.Events(max(n-20, 0), n)
				if int64(len(evs)) != min(n, 20) {
					t.Errorf("Events(%d,%d) returned %d", max(n-20, 0), n, len(evs))
				}
				for j, ev := range evs {
					if ev.Seq != max(n-20, 0)+int64(j) {
						t.Errorf("Events out of order")
					}
				}
				_ = l.DeriveMessages()
				_ = l.Surface()
				_ = l.State()
			}
		})
	}
	close(start)
	wg.Wait()

	total := int64(appenders * perAppender)
	if l.Len() != total {
		t.Fatalf("len %d, want %d", l.Len(), total)
	}
	if got := len(l.DeriveMessages()); got != appenders*perAppender/10 {
		t.Fatalf("derived %d messages", got)
	}
	for i, s := range subs {
		s.mu.Lock()
		if int64(len(s.seen)) != total-s.next {
			t.Errorf("subscriber %d (next %d) saw %d events, want %d", i, s.next, len(s.seen), total-s.next)
		}
		for j, seq := range s.seen {
			if seq != s.next+int64(j) {
				t.Errorf("subscriber %d: event %d has seq %d, want %d", i, j, seq, s.next+int64(j))
				break
			}
		}
		s.mu.Unlock()
	}
}

// TestConcurrentReentrantAppends mixes concurrent appenders with subscribers
// that append from their callbacks: order stays gap-free for everyone.
func TestConcurrentReentrantAppends(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	var (
		mu     sync.Mutex
		seenA  []int64
		seenB  []int64
		echoes int
	)
	l.Subscribe(func(ev Event) {
		mu.Lock()
		seenA = append(seenA, ev.Seq)
		mu.Unlock()
		if ev.Type == TypeToolOutput {
			if _, err := l.Append(TypeSessionTitle, SessionTitle{Title: "echo"}); err != nil {
				t.Error(err)
			}
			mu.Lock()
			echoes++
			mu.Unlock()
		}
	})
	l.Subscribe(func(ev Event) {
		mu.Lock()
		seenB = append(seenB, ev.Seq)
		mu.Unlock()
	})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				if _, err := l.Append(TypeToolOutput, ToolOutput{Text: "x"}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if l.Len() != 400 || echoes != 200 {
		t.Fatalf("len %d echoes %d, want 400 and 200", l.Len(), echoes)
	}
	for name, seen := range map[string][]int64{"A": seenA, "B": seenB} {
		if len(seen) != 400 {
			t.Fatalf("%s saw %d events", name, len(seen))
		}
		for i, seq := range seen {
			if seq != int64(i) {
				t.Fatalf("%s: position %d has seq %d", name, i, seq)
			}
		}
	}
}

// HoldDelivery: appends made under a hold are queued, not delivered; the
// release delivers them in order on the releasing goroutine, so a caller
// that appends under its own lock can release after unlocking and a
// subscriber may take that lock.
func TestHoldDelivery(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	var mu sync.Mutex
	var got []int64
	l.Subscribe(func(ev Event) {
		mu.Lock() // deadlocks if delivered while the appender holds mu
		got = append(got, ev.Seq)
		mu.Unlock()
	})
	release := l.HoldDelivery()
	mu.Lock()
	if _, err := l.Append(TypeTurnStart, TurnStart{Turn: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(TypeSessionTitle, SessionTitle{Title: "t", Source: TitleFallback}); err != nil {
		t.Fatal(err)
	}
	held := len(got)
	mu.Unlock()
	release()
	release() // idempotent
	if held != 0 || !slices.Equal(got, []int64{0, 1}) {
		t.Fatalf("delivered %d under the hold; after release %v", held, got)
	}
	if _, err := l.Append(TypeTurnEnd, TurnEnd{Turn: 1, Reason: TurnEndReason{Kind: ReasonCompleted}}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int64{0, 1, 2}) {
		t.Fatalf("after the hold: %v", got)
	}
}
