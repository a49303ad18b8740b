package session

import (
	"bytes"
	"math"
)

// Fork returns the seed for a child session: deep copies of src's events
// [0, boundary]. boundary < 0 means the last event; an empty source forks an
// empty seed. The boundary must be an existing seq (INVALID_BOUNDARY) and
// must not lie inside a turn: the last turn/start or turn/end at or before
// it must not be a turn/start (OPEN_TURN). Ending on a between-turn log-only
// event is fine.
//
// The caller builds the child with NewSeeded and a header carrying
// ParentSession and the inherited Cwd; NewSeeded sets SeedLength.
func Fork(src *Log, boundary int64) ([]Event, error) {
	events := src.Events(0, math.MaxInt64)
	if len(events) == 0 && boundary < 0 {
		return []Event{}, nil
	}
	if boundary < 0 {
		boundary = int64(len(events)) - 1
	}
	if boundary >= int64(len(events)) {
		return nil, errorf(CodeInvalidBoundary, "fork boundary %d is not an existing seq (log has %d events)", boundary, len(events))
	}
	seed := events[: boundary+1 : boundary+1]
	for i := len(seed) - 1; i >= 0; i-- {
		if seed[i].Type == TypeTurnEnd {
			break
		}
		if seed[i].Type == TypeTurnStart {
			return nil, errorf(CodeOpenTurn, "fork boundary %d is inside the turn opened at seq %d", boundary, seed[i].Seq)
		}
	}
	for i := range seed {
		seed[i].Data = bytes.Clone(seed[i].Data) // Events already copied the rest
	}
	return seed, nil
}
