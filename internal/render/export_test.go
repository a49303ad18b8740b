package render

import "harness/internal/session"

// FoldFigures folds a whole log's figures with the figures-only projection
// the footer's ledgers use, for the package's external tests.
func FoldFigures(events []session.Event) SessionFigures {
	p := newProjection(nil, false)
	p.figuresOnly = true
	for _, ev := range events {
		_ = p.apply(ev)
	}
	return p.totals
}
