package driver_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/session"
)

func keyed(text, user, key string) llm.Message {
	return llm.UserText(text, llm.Source{Kind: llm.SourceUser, UserID: user, Name: user, ClientID: key})
}

// inserted counts the messages inbox splices queued, by id.
func inserted(evs []session.Event, t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, ev := range evs {
		if ev.Type != session.TypeInboxSpliced {
			continue
		}
		s, err := session.Decode[session.InboxSpliced](ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range s.Inserted {
			out[m.ID]++
		}
	}
	return out
}

// A send key names one message per sender: the same key and content again
// returns the first id and queues nothing, across a restart too; other
// content is a conflict; another sender's same key is their own message.
func TestSendKeyStoresOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, script(textReply("one"), textReply("two"), textReply("three")))
	first := keyed("hello", "u1", "k1")
	id, err := h.agent.Send(h.ctx, first, session.TargetNextTurn)
	if err != nil || id != first.ID {
		t.Fatalf("first send = %q, %v; want %q", id, err, first.ID)
	}
	h.idle()

	tests := []struct {
		name    string
		msg     llm.Message
		wantID  string // "" : the message's own id
		wantErr error
	}{
		{"same key and content", keyed("hello", "u1", "k1"), first.ID, nil},
		{"same key, other content", keyed("hello!", "u1", "k1"), "", driver.ErrKeyConflict},
		{"another sender's same key", keyed("hello", "u2", "k1"), "", nil},
		{"a new key", keyed("hello", "u1", "k2"), "", nil},
	}
	for _, tt := range tests {
		id, err := h.agent.Send(h.ctx, tt.msg, session.TargetNextTurn)
		if !errors.Is(err, tt.wantErr) {
			t.Fatalf("%s: err %v, want %v", tt.name, err, tt.wantErr)
		}
		want := tt.wantID
		if want == "" && tt.wantErr == nil {
			want = tt.msg.ID
		}
		if id != want {
			t.Fatalf("%s: id %q, want %q", tt.name, id, want)
		}
		h.idle()
	}
	if n := len(inserted(h.events(), t)); n != 3 {
		t.Fatalf("%d messages queued, want 3 (first, u2's, k2)\n%s", n, h.dump())
	}

	// The keys are in the log: a restarted server honours them.
	h.restart()
	a, err := h.mgr.Get(h.ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	h.agent = a
	if id, err := a.Send(h.ctx, keyed("hello", "u1", "k1"), session.TargetNextStep); err != nil || id != first.ID {
		t.Fatalf("after a restart: %q, %v; want %q", id, err, first.ID)
	}
	if n := len(inserted(h.events(), t)); n != 3 {
		t.Fatalf("%d messages queued after the restart's repeat, want 3", n)
	}
}

// A key names its message for SendKeyTTL, then the same send is new.
func TestSendKeyExpires(t *testing.T) {
	t.Parallel()
	var now atomic.Int64
	now.Store(1_000_000)
	h := newHarness(t, script(textReply("one"), textReply("two")),
		withManager(func(o *driver.Options) { o.Clock = now.Load }))
	first := keyed("hi", "u1", "k")
	if _, err := h.agent.Send(h.ctx, first, session.TargetNextTurn); err != nil {
		t.Fatal(err)
	}
	h.idle()
	now.Add(session.SendKeyTTL - 1)
	if id, _ := h.agent.Send(h.ctx, keyed("hi", "u1", "k"), session.TargetNextTurn); id != first.ID {
		t.Fatalf("within the TTL: %q, want %q", id, first.ID)
	}
	now.Add(1)
	again := keyed("hi", "u1", "k")
	if id, err := h.agent.Send(h.ctx, again, session.TargetNextTurn); err != nil || id != again.ID {
		t.Fatalf("after the TTL: %q, %v; want a new message %q", id, err, again.ID)
	}
	h.idle()
}

// refusingStore is the real store whose flushes fail while refuse is set,
// as a full disk does.
type refusingStore struct {
	driver.Store
	refuse atomic.Bool
}

var errDiskFull = errors.New("database or disk is full")

func (s *refusingStore) Flush(ctx context.Context, id string) error {
	if s.refuse.Load() {
		return errDiskFull
	}
	return s.Store.Flush(ctx, id)
}

// A send the store refuses is taken back: it never runs, the refusal
// keeps nothing, and the same key sent again once the store takes writes
// is stored once and runs once.
func TestRefusedSendKeepsNothing(t *testing.T) {
	t.Parallel()
	st := &refusingStore{}
	h := newHarness(t, script(textReply("ran")), withStore(func(s driver.Store) driver.Store { st.Store = s; return st }))
	st.refuse.Store(true)
	refused := keyed("do it", "u1", "k")
	if _, err := h.agent.Send(h.ctx, refused, session.TargetNextTurn); !errors.Is(err, driver.ErrNotStored) || !errors.Is(err, errDiskFull) {
		t.Fatalf("send on a refusing store: %v, want ErrNotStored wrapping the cause", err)
	}
	if q := h.agent.Queue(); len(q.Queued)+len(q.Steering) != 0 || h.agent.Status() != driver.StatusIdle {
		t.Fatalf("the refused send is still queued (%+v) or running (%s)", q, h.agent.Status())
	}

	st.refuse.Store(false)
	again := keyed("do it", "u1", "k")
	id, err := h.agent.Send(h.ctx, again, session.TargetNextTurn)
	if err != nil || id != again.ID {
		t.Fatalf("the retry: %q, %v; want the new message %q", id, err, again.ID)
	}
	h.idle()
	var people []string
	for _, m := range find[llm.Message](h, session.TypeUserMessage) {
		if m.Source.Kind == llm.SourceUser {
			people = append(people, m.ID)
		}
	}
	if len(people) != 1 || people[0] != again.ID {
		t.Fatalf("a person's messages %v, want only the retry %s", people, again.ID)
	}
	if ends := h.turnEnds(); len(ends) != 1 || ends[0].Kind != session.ReasonCompleted {
		t.Fatalf("turn ends %+v, want one completed turn", ends)
	}
	// What was stored replays to the same inbox: the taken-back message
	// is gone and its key free.
	keys, err := session.SentKeys(h.events(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := keys[session.SendKey{UserID: "u1", ClientID: "k"}]; got.MessageID != again.ID || len(keys) != 1 {
		t.Fatalf("replayed keys %+v, want k naming the retry", keys)
	}
}

// While the store takes no writes a send whose key names a message is a
// repeat of a kept send: Repeat says so (not durable yet, or a conflict
// for other content), and says nothing for a key that names nothing, a
// key taken back included.
func TestRepeatWhileNotWritable(t *testing.T) {
	t.Parallel()
	st := &refusingStore{}
	h := newHarness(t, script(textReply("ran")), withStore(func(s driver.Store) driver.Store { st.Store = s; return st }))
	first := keyed("do it", "u1", "k")
	if _, err := h.agent.Send(h.ctx, first, session.TargetNextTurn); err != nil {
		t.Fatal(err)
	}
	h.idle()
	cause := errors.New("the database does not take writes")
	if ok, err := h.agent.Repeat(keyed("do it", "u1", "k"), cause); !ok || !errors.Is(err, driver.ErrNotDurable) || !errors.Is(err, cause) {
		t.Fatalf("a repeat of a kept send: %v, %v; want not durable wrapping the cause", ok, err)
	}
	if ok, err := h.agent.Repeat(keyed("other text", "u1", "k"), cause); !ok || !errors.Is(err, driver.ErrKeyConflict) {
		t.Fatalf("a repeat with other content: %v, %v; want a conflict", ok, err)
	}
	if ok, err := h.agent.Repeat(keyed("do it", "u2", "k"), cause); ok || err != nil {
		t.Fatalf("another sender's key: %v, %v; want no repeat", ok, err)
	}
	st.refuse.Store(true)
	if _, err := h.agent.Send(h.ctx, keyed("refused", "u1", "k2"), session.TargetNextTurn); !errors.Is(err, driver.ErrNotStored) {
		t.Fatalf("send on a refusing store: %v", err)
	}
	if ok, err := h.agent.Repeat(keyed("refused", "u1", "k2"), cause); ok || err != nil {
		t.Fatalf("the key of a send taken back: %v, %v; want no repeat", ok, err)
	}
	st.refuse.Store(false)
}

// refuseAfterTurnEnd refuses every flush from the first turn/end on.
type refuseAfterTurnEnd struct {
	refusingStore
}

func (s *refuseAfterTurnEnd) Enqueue(id string, ev session.Event) {
	s.Store.Enqueue(id, ev)
	if ev.Type == session.TypeTurnEnd {
		s.refuse.Store(true)
	}
}

// A turn whose end the store does not take yet (a full disk, a lock
// another process holds) still ends as it did; viewers are told its events
// are not stored yet, as a persistence failure, not an unknown one.
func TestTurnEndNotStoredIsAPersistenceFailure(t *testing.T) {
	t.Parallel()
	st := &refuseAfterTurnEnd{}
	h := newHarness(t, script(textReply("done")), withStore(func(s driver.Store) driver.Store { st.Store = s; return st }))
	if _, err := h.agent.Send(h.ctx, keyed("hi", "u1", "k"), session.TargetNextTurn); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if end := h.lastTurnEnd(); end.Kind != session.ReasonCompleted {
		t.Fatalf("turn end %+v, want completed", end)
	}
	errs := h.live.kinds(driver.LiveError)
	if len(errs) != 1 || errs[0].Error.Code != driver.CodePersistence || !strings.Contains(errs[0].Error.Message, "not stored yet") {
		t.Fatalf("error notifications %+v, want one persistence failure", errs)
	}
	st.refuse.Store(false)
}
