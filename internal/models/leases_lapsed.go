package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Lapsed is how long ago the session's lease expired, by the database's
// clock, so that no replica's clock skews it (0 when it has not expired,
// or the session has no lease). It times takeovers (metrics).
func (l *Leases) Lapsed(ctx context.Context, sessionID string) (time.Duration, error) {
	var ms float64
	err := l.db.QueryRowContext(ctx, `
		SELECT GREATEST(EXTRACT(EPOCH FROM now() - expires_at) * 1000, 0)::float8
		FROM session_leases WHERE session_id = $1`, sessionID).Scan(&ms)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("lease of session %s: lapse: %w", sessionID, err)
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
}
