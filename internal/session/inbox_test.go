package session

import (
	"slices"
	"testing"

	"harness/internal/llm"
)

func msgs(ids ...string) []llm.Message {
	out := make([]llm.Message, len(ids))
	for i, id := range ids {
		out[i] = userMsg(id, "text "+id)
	}
	return out
}

func TestApplySplice(t *testing.T) {
	t.Parallel()
	bad := userMsg("bad", "x")
	bad.Role = llm.RoleAssistant
	tests := []struct {
		name   string
		list   []string
		splice InboxSpliced
		want   []string
		err    bool
	}{
		{"append", []string{"a"}, InboxSpliced{Target: TargetNextTurn, Start: 1, Inserted: msgs("b")}, []string{"a", "b"}, false},
		{"prepend", []string{"a"}, InboxSpliced{Target: TargetNextStep, Start: 0, Inserted: msgs("b")}, []string{"b", "a"}, false},
		{"claim first", []string{"a", "b"}, InboxSpliced{Target: TargetNextTurn, Start: 0, RemovedCount: 1}, []string{"b"}, false},
		{"replace middle", []string{"a", "b", "c"}, InboxSpliced{Target: TargetNextTurn, Start: 1, RemovedCount: 1, Inserted: msgs("x"), Outcome: OutcomeCanceled}, []string{"a", "x", "c"}, false},
		{"clear", []string{"a", "b"}, InboxSpliced{Target: TargetNextStep, Start: 0, RemovedCount: 2, Outcome: OutcomeCanceled}, []string{}, false},
		{"start past the end", []string{"a"}, InboxSpliced{Target: TargetNextTurn, Start: 2, Inserted: msgs("b")}, nil, true},
		{"negative start", []string{"a"}, InboxSpliced{Target: TargetNextTurn, Start: -1}, nil, true},
		{"removes too many", []string{"a", "b"}, InboxSpliced{Target: TargetNextTurn, Start: 1, RemovedCount: 2}, nil, true},
		{"negative removedCount", []string{"a"}, InboxSpliced{Target: TargetNextTurn, RemovedCount: -1}, nil, true},
		{"duplicate id", []string{"a"}, InboxSpliced{Target: TargetNextTurn, Start: 1, Inserted: msgs("a")}, nil, true},
		{"unknown target", []string{}, InboxSpliced{Target: "later", Inserted: msgs("a")}, nil, true},
		{"unknown outcome", []string{"a"}, InboxSpliced{Target: TargetNextTurn, RemovedCount: 1, Outcome: "done"}, nil, true},
		{"inserted non-user message", []string{}, InboxSpliced{Target: TargetNextTurn, Inserted: []llm.Message{bad}}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			list := msgs(tt.list...)
			before := slices.Clone(list)
			got, err := ApplySplice(list, tt.splice)
			if tt.err {
				wantCode(t, err, CodeInvalidSplice)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ids := messageIDs(got); !slices.Equal(ids, tt.want) {
				t.Fatalf("got %v, want %v", ids, tt.want)
			}
			if !slices.EqualFunc(list, before, func(a, b llm.Message) bool { return a.ID == b.ID }) {
				t.Fatal("ApplySplice modified its input")
			}
		})
	}
}

func TestInboxProjection(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	s := newScript(t, l)
	splice := func(target InboxTarget, start, removed int, ids ...string) {
		s.append(TypeInboxSpliced, InboxSpliced{Target: target, Start: start, RemovedCount: removed, Inserted: msgs(ids...)})
	}
	splice(TargetNextTurn, 0, 0, "first")
	splice(TargetNextTurn, 1, 0, "p1")
	splice(TargetNextTurn, 2, 0, "p2")
	splice(TargetNextStep, 0, 0, "ctx")
	s.startTurn()
	splice(TargetNextStep, 0, 1) // claim: next-step first
	splice(TargetNextTurn, 0, 1) // then the prompt
	splice(TargetNextTurn, 2, 0, "p3")

	nextTurn, nextStep, err := Inbox(l.Events(0, l.Len()), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := messageIDs(nextTurn); !slices.Equal(got, []string{"p1", "p2", "p3"}) || len(nextStep) != 0 {
		t.Fatalf("whole log: next-turn %v next-step %v", got, messageIDs(nextStep))
	}
	// Duplicate ids across the two lists are refused.
	dup := newTestLog()
	ds := newScript(t, dup)
	ds.append(TypeInboxSpliced, InboxSpliced{Target: TargetNextTurn, Inserted: msgs("same")})
	ds.append(TypeInboxSpliced, InboxSpliced{Target: TargetNextStep, Inserted: msgs("same")})
	_, _, err = Inbox(dup.Events(0, dup.Len()), 0)
	wantCode(t, err, CodeInvalidSplice)
}

func TestInboxIgnoresSeedSplices(t *testing.T) {
	t.Parallel()
	parent := newTestLog()
	ps := newScript(t, parent)
	ps.append(TypeInboxSpliced, InboxSpliced{Target: TargetNextTurn, Inserted: msgs("queued-in-parent")})
	seed, err := Fork(parent, -1)
	if err != nil {
		t.Fatal(err)
	}
	child, err := NewSeeded(Header{ID: "child", ParentSession: "p"}, seed, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs := newScript(t, child)
	cs.append(TypeInboxSpliced, InboxSpliced{Target: TargetNextTurn, Inserted: msgs("own")})
	nextTurn, _, err := Inbox(child.Events(0, child.Len()), child.Header().SeedLength)
	if err != nil {
		t.Fatal(err)
	}
	if got := messageIDs(nextTurn); !slices.Equal(got, []string{"own"}) {
		t.Fatalf("child inbox %v, want [own]", got)
	}
}
