package compact

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"harness/internal/llm"
	"harness/internal/session"
)

// outcome describes one committed summary compaction.
type outcome struct {
	CompactionID     string
	ShadowedRange    session.SeqRange
	ShadowedSeqs     []int64
	ShadowedTokens   int64 // heuristic price of the replaced span
	CheckpointTokens int64 // heuristic price of the checkpoint
	CheckpointSeq    int64
}

// region is one compaction transaction's input.
type region struct {
	log       *session.Log
	sessionID string
	providers *llm.Registry
	// header is the conversation's request header: its route makes the
	// summary call and its system prompt and tools are replayed.
	header    session.EpochHeader
	meas      Measurement
	rng       Range
	manual    bool // standalone bracket (turn null) between turns
	commandID string
	maxTokens int
}

// errSurfaceChanged rejects a summary whose span changed meanwhile.
var errSurfaceChanged = errors.New("the history changed while it was being summarized")

// compactRegion runs the transaction of upstream §6.4. Validation and the
// lock check come first and write nothing. Once compaction/start is logged,
// every failure appends exactly one compaction/end{error}; success appends
// compaction/summary, immediately the replacing checkpoint user/message,
// then compaction/end.
func compactRegion(ctx context.Context, r region) (outcome, error) {
	l := r.log
	if err := validateRegion(l, r.meas, r.rng); err != nil {
		return outcome{}, err
	}
	if err := checkUnlocked(l); err != nil {
		return outcome{}, err
	}
	st := l.State()
	var turn *int
	switch {
	case r.manual && st.TurnOpen:
		return outcome{}, fmt.Errorf("%w: manual compaction needs a session without an open turn", ErrBusy)
	case !r.manual && !st.TurnOpen:
		return outcome{}, errors.New("automatic compaction needs an open turn")
	case !r.manual:
		t := st.LastTurn
		turn = &t
	}
	if r.manual && ctx.Err() != nil {
		return outcome{}, ctx.Err()
	}

	id := llm.NewID()
	start, err := l.Append(session.TypeCompactionStart, session.CompactionStart{CompactionID: id, SourceCommandID: r.commandID, Turn: turn})
	if err != nil {
		return outcome{}, fmt.Errorf("compaction start: %w", err)
	}
	out, err := summarizeRegion(ctx, r, id, start.Seq)
	if err != nil {
		if _, cerr := l.Append(session.TypeCompactionEnd, session.CompactionEnd{CompactionID: id, Turn: turn, Error: err.Error()}); cerr != nil {
			return outcome{}, errors.Join(err, fmt.Errorf("compaction end: %w", cerr))
		}
		return outcome{}, err
	}
	// A failure to log the closing marker leaves the start unmatched, which
	// stays detectable (and is closed by crash repair after a restart).
	if _, err := l.Append(session.TypeCompactionEnd, session.CompactionEnd{CompactionID: id, Turn: turn}); err != nil {
		return out, fmt.Errorf("compaction end: %w", err)
	}
	return out, nil
}

// summarizeRegion is the body of the bracket: summarize, re-validate, check
// the summary is smaller, then land summary and checkpoint.
func summarizeRegion(ctx context.Context, r region, id string, startSeq int64) (outcome, error) {
	l := r.log
	surface := l.Surface()
	msgs := make([]llm.Message, 0, len(r.rng.Seqs))
	for _, seq := range r.rng.Seqs {
		ev, ok := l.Event(seq)
		if !ok {
			return outcome{}, fmt.Errorf("surface node %d is missing", seq)
		}
		m, err := projection(ev)
		if err != nil {
			return outcome{}, fmt.Errorf("surface node %d: %w", seq, err)
		}
		if m != nil {
			msgs = append(msgs, *m)
		}
	}

	sum, err := summarize(ctx, r.providers, r.sessionID, summaryInput{header: r.header, messages: msgs}, r.maxTokens)
	if err != nil {
		return outcome{}, err
	}
	if r.manual && ctx.Err() != nil {
		return outcome{}, fmt.Errorf("manual compaction cancelled: %w", ctx.Err())
	}
	now := l.Surface()
	if r.manual {
		// Injected context may land meanwhile; only the span must stay.
		i := slices.Index(now, r.rng.Start)
		if i < 0 || i+len(r.rng.Seqs) > len(now) || !slices.Equal(now[i:i+len(r.rng.Seqs)], r.rng.Seqs) {
			return outcome{}, errSurfaceChanged
		}
	} else if !slices.Equal(now, surface) {
		return outcome{}, errSurfaceChanged
	}

	cp := checkpointMessage(id, sum.blocks)
	cpTokens := EstimateMessage(cp)
	if cpTokens >= r.rng.Tokens {
		return outcome{}, fmt.Errorf("the summary (%d estimated tokens) is not smaller than the history it replaces (%d)", cpTokens, r.rng.Tokens)
	}
	shadowed := session.SeqRange{Start: r.rng.Start, End: r.rng.End}
	// The summary and the checkpoint replacing the range go in together:
	// nothing may land between them.
	evs, err := l.AppendGroup(func(next int64) ([]session.Draft, error) {
		return []session.Draft{
			{Type: session.TypeCompactionSum, Data: session.CompactionSummary{
				CompactionID:       id,
				Summary:            sum.blocks,
				ShadowedRange:      shadowed,
				ShadowedSeqs:       r.rng.Seqs,
				ShadowedTokenCount: r.rng.Tokens,
				Provider:           sum.provider,
				Model:              sum.model,
				MaxTokens:          sum.maxTokens,
				Usage:              sum.usage,
			}},
			{Type: session.TypeUserMessage, Data: cp, SurfaceOp: session.Replace(r.rng.Start, r.rng.End),
				SourceEventSeqs: append([]int64{startSeq, next}, r.rng.Seqs...)},
		}, nil
	})
	if err != nil {
		return outcome{}, fmt.Errorf("compaction summary: %w", err)
	}
	cpEv := evs[1]
	return outcome{
		CompactionID:     id,
		ShadowedRange:    shadowed,
		ShadowedSeqs:     r.rng.Seqs,
		ShadowedTokens:   r.rng.Tokens,
		CheckpointTokens: cpTokens,
		CheckpointSeq:    cpEv.Seq,
	}, nil
}

// validateRegion checks that the range is a span of the current surface, as
// measured, and that neither edge splits a tool call from its result.
func validateRegion(l *session.Log, m Measurement, r Range) error {
	surface := l.Surface()
	if len(surface) != len(m.Nodes) {
		return errSurfaceChanged
	}
	for i, n := range m.Nodes {
		if surface[i] != n.Seq {
			return errSurfaceChanged
		}
	}
	switch {
	case len(r.Seqs) == 0 || r.StartIdx < 0 || r.EndIdx >= len(surface) || r.StartIdx > r.EndIdx:
		return fmt.Errorf("compaction range %d..%d is not a span of the surface", r.Start, r.End)
	case !slices.Equal(surface[r.StartIdx:r.EndIdx+1], r.Seqs):
		return errSurfaceChanged
	}
	cuts := balancedCuts(m.Nodes)
	if !cuts[r.StartIdx] || !cuts[r.EndIdx+1] {
		return fmt.Errorf("compaction range %d..%d would split a tool call from its result", r.Start, r.End)
	}
	return nil
}
