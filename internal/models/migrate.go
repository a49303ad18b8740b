package models

import (
	"context"
	"fmt"
	"slices"
)

// boundaryFilter selects the boundary rows (boundaryTypes, logrows.go) that
// TailPage and Summary look up by type. The partial index below covers
// exactly this list, and every query that wants
// the index repeats boundaryFilter verbatim: both SQLite and PostgreSQL only
// use a partial index when the query's WHERE clause contains its predicate.
const boundaryFilter = `type IN ('turn/start','step/start','user/message','assistant/message')`

// extraMigrations are what AutoMigrate cannot express.
var extraMigrations = []string{
	// Message and turn boundaries, for TailPage cuts and Summary counts; a
	// partial index costs nothing for the group rows that dominate the log
	// (a boundary is a row of its own, so seq is its own seq).
	`CREATE INDEX IF NOT EXISTS idx_log_rows_boundaries ON log_rows (log_key, seq, type) WHERE ` + boundaryFilter,
	// Sessions with queued inbox items, scanned at server start.
	`CREATE INDEX IF NOT EXISTS idx_sessions_pending_inbox ON sessions (id) WHERE pending_inbox > 0`,
}

// schemaSteps are the ordered migrations beyond migrateModels: append new
// ones at the end, never edit, reorder or remove one (schema_version.go
// says when they run and how to write them).
var schemaSteps = []schemaStep{
	{name: "baseline: the tables and indexes of migrateModels"},
	{name: "sessions get log keys", run: assignLogKeys},
	{name: "events move to log_rows", run: func(ctx context.Context, db *DB) error {
		_, err := convertLegacyEvents(ctx, db.W)
		return err
	}},
	{name: "replicas and session leases (PostgreSQL; leases.go)", run: leaseSchema},
	// The columns come from ProviderConfig through migrateModels; the
	// step only records that this build has them (nulls: no prices).
	{name: "model routes get prices and a context window"},
	// The table comes from MCPServerRow through migrateModels.
	{name: "MCP servers stored in Settings"},
	// The column comes from Session through migrateModels (default "":
	// every older session is an ordinary one).
	{name: "sessions get a kind (subagent children)"},
	// The attachments table and the routes' image_input column come from
	// the models through migrateModels; the step records that this build
	// has them.
	{name: "attachments (images of sessions) and routes' image input"},
}

// migrateModels brings every table, column and index to what the models
// and extraMigrations say; it is idempotent. migrate (schema_version.go)
// runs it only when the database is not current.
func migrateModels(ctx context.Context, db *DB) error {
	all := AllModels()
	if db.Driver == DriverSQLite {
		// log_rows is a WITHOUT ROWID table, which GORM's SQLite migrator
		// neither creates nor keeps (it rebuilds a table it wants to alter):
		// the table is created here and left out of AutoMigrate.
		if err := db.W.WithContext(ctx).Exec(logRowsSQLite).Error; err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		all = slices.DeleteFunc(all, func(m any) bool { _, ok := m.(*LogRow); return ok })
	}
	if err := db.W.WithContext(ctx).AutoMigrate(all...); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, stmt := range extraMigrations {
		if err := db.W.WithContext(ctx).Exec(stmt).Error; err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	return nil
}
