package service

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"harness/internal/auth"
	"harness/internal/compact"
	"harness/internal/driver"
	"harness/internal/llm"
)

// CompactResult is the outcome of a manual compaction (/compact).
type CompactResult struct {
	// Compacted is false when there was nothing to compact yet (the
	// history is a single exchange); nothing was logged then.
	Compacted    bool   `json:"compacted"`
	CompactionID string `json:"compactionId,omitempty"`
	// CommandID is recorded as the compaction's sourceCommandId.
	CommandID string `json:"commandId"`
	// Replaced is how many history items the summary replaced.
	Replaced int `json:"replaced"`
	// TokensSaved is the estimated size reduction of the history.
	TokensSaved int64 `json:"tokensSaved"`
	// Message says what happened, for people.
	Message string `json:"message"`
	// Context is the context meter afterwards.
	Context ContextMeter `json:"context"`
}

// Compact summarizes the session's history but its newest exchange into a
// checkpoint, now, as a manual compaction between turns (writers only). It
// needs an idle agent: a running turn or another compaction is busy.
// Messages sent meanwhile wait and run once it is done.
func (s *Service) Compact(ctx context.Context, a *auth.Actor, id string) (CompactResult, error) {
	ag, release, err := s.writable(ctx, a, id)
	if err != nil {
		return CompactResult{}, err
	}
	defer release()
	if _, err := s.checkRoute(ctx, ag); err != nil {
		return CompactResult{}, err
	}
	opts := s.compact
	opts.Providers = s.providers
	opts.CommandID = llm.NewID()
	res, err := compact.Compact(ctx, ag, opts)
	if err != nil {
		return CompactResult{}, s.compactFailure(ctx, id, err)
	}
	out := CompactResult{
		Compacted: res.Compacted, CompactionID: res.CompactionID, CommandID: opts.CommandID,
		Replaced: res.Replaced, TokensSaved: res.TokensSaved, Message: "No compactable history yet.",
	}
	if res.Compacted {
		out.Message = fmt.Sprintf("Compacted %d %s into a summary, about %s tokens saved.",
			res.Replaced, plural(res.Replaced, "item", "items"), approxTokens(res.TokensSaved))
		s.log.InfoContext(ctx, "manual compaction", "session", id, "by", a.UserID,
			"replaced", res.Replaced, "tokensSaved", res.TokensSaved)
	}
	out.Context, _ = s.LiveContext(ctx, id)
	return out, nil
}

// compactFailure classifies a failed manual compaction. Model and summary
// failures are compaction_failed: the transcript shows the logged reason
// (compaction/end), the answer only its class.
func (s *Service) compactFailure(ctx context.Context, id string, err error) error {
	var f *llm.Failure
	switch {
	case errors.Is(err, compact.ErrBusy), errors.Is(err, driver.ErrNotIdleForTask):
		return wrap(CodeBusy, "the agent is busy; compact when it is idle", err)
	case errors.Is(err, driver.ErrDisposed), errors.Is(err, driver.ErrNotDurable),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return s.fail(ctx, "compact", err)
	case errors.As(err, &f):
		s.log.WarnContext(ctx, "manual compaction failed", "session", id, "err", err)
		return wrap(CodeCompactionFailed, "compaction failed: the model request failed ("+string(f.Code)+"); the history is unchanged", err)
	}
	s.log.WarnContext(ctx, "manual compaction failed", "session", id, "err", err)
	return wrap(CodeCompactionFailed, "compaction failed; the transcript shows why", err)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// approxTokens formats a token count for people (950, 8.1k, 1.2M).
func approxTokens(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 1_000_000:
		return strconv.FormatFloat(float64(n)/1000, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(float64(n)/1_000_000, 'f', 1, 64) + "M"
}
