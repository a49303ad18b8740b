package compact

import (
	"errors"
	"fmt"

	"harness/internal/driver"
	"harness/internal/session"
)

// ErrBusy is returned when a compaction cannot start: the agent is not idle
// (manual compaction), a turn is open (manual), or another compaction holds
// the lock. It is driver.ErrBusy, so callers need one check.
var ErrBusy = driver.ErrBusy

// errNothingToCompact is returned by automatic paths when no range can be
// compacted (the retained tail is the whole surface).
var errNothingToCompact = errors.New("nothing to compact")

// openBracket returns the seq of an unmatched compaction/start after the
// last session/end-seed, the compaction lock (§1.8: brackets before the last
// end-seed belong to a dead process and are ignored).
func openBracket(l *session.Log) (int64, bool) {
	open := map[string]int64{}
	var last int64 = -1
	for _, ev := range l.Events(l.LastEndSeed()+1, l.Len()) {
		switch ev.Type {
		case session.TypeCompactionStart:
			if cs, err := session.Decode[session.CompactionStart](ev); err == nil {
				open[cs.CompactionID] = ev.Seq
			}
		case session.TypeCompactionEnd:
			if ce, err := session.Decode[session.CompactionEnd](ev); err == nil {
				delete(open, ce.CompactionID)
			}
		}
	}
	for _, seq := range open {
		last = max(last, seq)
	}
	return last, last >= 0
}

// checkUnlocked fails with ErrBusy while another compaction is running.
func checkUnlocked(l *session.Log) error {
	if seq, busy := openBracket(l); busy {
		return fmt.Errorf("%w: compaction %d is still running", ErrBusy, seq)
	}
	return nil
}

// OnLoad is a driver.Options.OnLoad hook: a cold-loaded log whose last
// compaction bracket is still open gets a session/end-seed, so the dead
// bracket no longer holds the compaction lock. Crash repair (which runs
// first) closes every bracket a crash left open, so this is the backstop
// for a log loaded without it.
func OnLoad(l *session.Log) error {
	if _, open := openBracket(l); !open {
		return nil
	}
	if _, _, err := l.EnsureEndSeed(); err != nil {
		return fmt.Errorf("close dead compaction bracket: %w", err)
	}
	return nil
}
