package models

import (
	"testing"
	"time"

	"harness/internal/session"
)

// pageLog is a three-turn log with its message boundaries:
//
//	 0 inbox   1 turn/start   2 inbox   3 step/start   4 U1   5 header
//	 6-7 chunks   8 A1 (tool call)   9 tool/call   10 tool/result   11 step/end
//	12 step/start   13 chunk   14 A2   15 step/end   16 turn/end   17 inbox
//	18 turn/start   19 step/start   20 U2   21 U3 (same step)   22 chunk   23 A3
//	24 step/end   25 turn/end   26 turn/start   27 step/start   28 U4
//	29-30 chunks of an in-flight reply
var pageLog = []session.Type{
	session.TypeInboxSpliced, session.TypeTurnStart, session.TypeInboxSpliced, session.TypeStepStart,
	session.TypeUserMessage, session.TypeRequestHeader, session.TypeAssistantChunk, session.TypeAssistantChunk,
	session.TypeAssistantMessage, session.TypeToolCall, session.TypeToolResult, session.TypeStepEnd,
	session.TypeStepStart, session.TypeAssistantChunk, session.TypeAssistantMessage, session.TypeStepEnd,
	session.TypeTurnEnd, session.TypeInboxSpliced, session.TypeTurnStart, session.TypeStepStart,
	session.TypeUserMessage, session.TypeUserMessage, session.TypeAssistantChunk, session.TypeAssistantMessage,
	session.TypeStepEnd, session.TypeTurnEnd, session.TypeTurnStart, session.TypeStepStart,
	session.TypeUserMessage, session.TypeAssistantChunk, session.TypeAssistantChunk,
}

func TestTailPage(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		s := newTestStore(t, db, WriterOptions{})
		id := mustCreate(t, s, &Session{OwnerID: "o"}).ID
		for seq, typ := range pageLog {
			s.W.Enqueue(id, ev(int64(seq), typ, map[string]int{"n": seq}))
		}
		if err := s.W.Flush(ctxTimeout(t, 10*time.Second), id); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name        string
			before      int64
			max         int
			first, last int64 // -1, -1: empty page
			hasMore     bool
		}{
			{"tail: user message opened by its step and turn, in-flight chunks included", -1, 1, 26, 30, true},
			{"assistant message opened by the user message of its step", 26, 1, 21, 25, true},
			{"user message opened by step and turn; the inbox insert stays older", 21, 1, 18, 20, true},
			{"second step's reply opens at its step/start", 18, 1, 12, 17, true},
			{"oldest page reaches back to seq 0", 12, 1, 0, 11, false},
			{"three messages", -1, 3, 21, 30, true},
			{"exactly every message", -1, 7, 0, 30, false},
			{"more than every message", -1, 100, 0, 30, false},
			{"bounded by before", 14, 2, 0, 13, false},
			{"before the first message", 4, 1, 0, 3, false},
			{"nothing before seq 0", 0, 5, -1, -1, false},
		} {
			page, hasMore, err := s.TailPage(t.Context(), id, tc.before, tc.max)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			first, last := int64(-1), int64(-1)
			if len(page) > 0 {
				first, last = page[0].Seq, page[len(page)-1].Seq
			}
			if first != tc.first || last != tc.last || hasMore != tc.hasMore || int64(len(page)) != last-first+1 && len(page) > 0 {
				t.Errorf("%s: page %d..%d (%d events) hasMore %v, want %d..%d hasMore %v",
					tc.name, first, last, len(page), hasMore, tc.first, tc.last, tc.hasMore)
			}
			for i, e := range page {
				if e.Type != pageLog[first+int64(i)] {
					t.Errorf("%s: event %d decoded as %s", tc.name, e.Seq, e.Type)
				}
			}
		}
		// An unknown session has an empty page.
		page, hasMore, err := s.TailPage(t.Context(), "missing", -1, 5)
		if err != nil || len(page) != 0 || hasMore {
			t.Errorf("missing session: %d events, %v, %v", len(page), hasMore, err)
		}
	})
}

func TestEventsSinceLimits(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		s := newTestStore(t, db, WriterOptions{})
		id := mustCreate(t, s, &Session{OwnerID: "o"}).ID
		for seq := range int64(10) {
			s.W.Enqueue(id, variedEvent(id, seq))
		}
		if err := s.W.Flush(ctxTimeout(t, 10*time.Second), id); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			since       int64
			limit       int
			first, last int64
		}{
			{-1, 0, 0, 9}, {-1, 3, 0, 2}, {4, 0, 5, 9}, {4, 2, 5, 6}, {8, 10, 9, 9}, {9, 0, -1, -1}, {100, 0, -1, -1},
		} {
			evs, err := s.EventsSince(t.Context(), id, tc.since, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := s.EventsRaw(t.Context(), id, tc.since, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			first, last := int64(-1), int64(-1)
			if len(evs) > 0 {
				first, last = evs[0].Seq, evs[len(evs)-1].Seq
			}
			if first != tc.first || last != tc.last || len(raw) != len(evs) {
				t.Errorf("since %d limit %d: %d..%d (%d raw), want %d..%d", tc.since, tc.limit, first, last, len(raw), tc.first, tc.last)
			}
		}
	})
}
