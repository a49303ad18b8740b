package compact

import (
	"context"
	"errors"
	"fmt"

	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/session"
)

// Result is the outcome of a manual compaction.
type Result struct {
	// Compacted is false when there was nothing to compact (the newest
	// balanced unit is the whole history); nothing was logged then.
	Compacted    bool   `json:"compacted"`
	CompactionID string `json:"compactionId,omitempty"`
	// Replaced is the number of history items the checkpoint replaced.
	Replaced int `json:"replaced"`
	// TokensSaved is the estimated size reduction of the history.
	TokensSaved   int64             `json:"tokensSaved"`
	ShadowedRange *session.SeqRange `json:"shadowedRange,omitempty"`
}

// Compact runs a manual compaction (/compact) on an idle agent: everything
// but the newest balanced unit is summarized, in a standalone bracket with
// turn null, so no turn number is consumed. It runs as the agent's
// maintenance task: it fails with ErrBusy unless the agent is idle, input
// sent meanwhile waits, and the session is flushed before that input runs.
// opts.Providers must be the manager's model routes.
func Compact(ctx context.Context, a *driver.Agent, opts Options) (Result, error) {
	opts = opts.withDefaults()
	if opts.Providers == nil {
		return Result{}, errors.New("compact: no model routes configured (Options.Providers)")
	}
	var res Result
	err := a.RunMaintenance(ctx, func(ctx context.Context) error {
		l := a.Log()
		if l.State().TurnOpen {
			return fmt.Errorf("%w: a turn is open", ErrBusy)
		}
		if err := checkUnlocked(l); err != nil {
			return err
		}
		h := manualHeader(l, opts.Providers)
		m := opts.Meter.Measure(l, opts.Window(opts.Providers, h.Config.Provider, h.Config.Model))
		rng, ok := SelectRange(m, 0)
		if !ok {
			return nil
		}
		out, err := compactRegion(ctx, region{
			log: l, sessionID: a.ID(), providers: opts.Providers, header: h,
			meas: m, rng: rng, manual: true, commandID: opts.CommandID, maxTokens: opts.MaxSummaryTokens,
		})
		if err != nil {
			return err
		}
		res = Result{
			Compacted:     true,
			CompactionID:  out.CompactionID,
			Replaced:      len(out.ShadowedSeqs),
			TokensSaved:   out.ShadowedTokens - out.CheckpointTokens,
			ShadowedRange: &out.ShadowedRange,
		}
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("compact session %s: %w", a.ID(), err)
	}
	return res, nil
}

// manualHeader is the header a manual summary call replays: the latest
// logged one, else (a session that never made a request) the selected or
// default route with no system prompt or tools.
func manualHeader(l *session.Log, providers *llm.Registry) session.EpochHeader {
	if h, ok := l.RequestHeader(); ok {
		return h
	}
	var h session.EpochHeader
	if sel := l.State().Model; sel != nil {
		h.Config.Provider, h.Config.Model = sel.Provider, sel.Model
	} else {
		h.Config.Provider, h.Config.Model = providers.Default()
	}
	return h
}
