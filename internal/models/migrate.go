package models

import (
	"context"
	"fmt"
)

// boundaryTypes are the event types TailPage and Summary look up by type. The
// partial index below covers exactly this list, and every query that wants
// the index repeats boundaryFilter verbatim: both SQLite and PostgreSQL only
// use a partial index when the query's WHERE clause contains its predicate.
const boundaryFilter = `type IN ('turn/start','step/start','user/message','assistant/message')`

// extraMigrations are what AutoMigrate cannot express.
var extraMigrations = []string{
	// Message and turn boundaries, for TailPage cuts and Summary counts; a
	// partial index costs nothing for the chunk rows that dominate the log.
	`CREATE INDEX IF NOT EXISTS idx_events_boundaries ON events (session_id, seq, type) WHERE ` + boundaryFilter,
	// Sessions with queued inbox items, scanned at server start.
	`CREATE INDEX IF NOT EXISTS idx_sessions_pending_inbox ON sessions (id) WHERE pending_inbox > 0`,
}

// migrate brings the schema up to date; it is idempotent.
func migrate(ctx context.Context, db *DB) error {
	if err := db.W.WithContext(ctx).AutoMigrate(AllModels()...); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, stmt := range extraMigrations {
		if err := db.W.WithContext(ctx).Exec(stmt).Error; err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	return nil
}
