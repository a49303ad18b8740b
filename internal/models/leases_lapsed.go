package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Lapsed is how long ago the session's lease could first be taken over:
// since it expired or its owner's heartbeat went stale, whichever came
// first, by the database's clock, so that no replica's clock skews it (0
// when neither happened, or the session has no lease). It times takeovers
// (metrics).
func (l *Leases) Lapsed(ctx context.Context, sessionID string) (time.Duration, error) {
	var ms float64
	err := l.db.QueryRowContext(ctx, `
		SELECT GREATEST(EXTRACT(EPOCH FROM now() - LEAST(sl.expires_at, r.heartbeat_at + $2 * interval '1 millisecond')) * 1000, 0)::float8
		FROM session_leases sl LEFT JOIN replicas r ON r.id = sl.owner WHERE sl.session_id = $1`, sessionID, l.staleMillis()).Scan(&ms)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("lease of session %s: lapse: %w", sessionID, err)
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
}
