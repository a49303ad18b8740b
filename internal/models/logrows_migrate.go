package models

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"gorm.io/gorm"

	"harness/internal/session"
)

// logRowsSQLite creates log_rows on SQLite as a WITHOUT ROWID table: the
// primary key is the table's order, so (session_id, seq) is stored once
// instead of again in a separate primary-key index. PostgreSQL gets the
// table from AutoMigrate.
const logRowsSQLite = `CREATE TABLE IF NOT EXISTS log_rows (
	log_key INTEGER NOT NULL,
	seq INTEGER NOT NULL,
	n INTEGER NOT NULL DEFAULT 1,
	"time" INTEGER NOT NULL,
	"type" TEXT NOT NULL,
	meta TEXT NOT NULL DEFAULT '',
	body BLOB NOT NULL,
	search_text TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (log_key, seq)
) WITHOUT ROWID`

// convertLegacyEvents moves the rows of the events table of earlier
// versions (one full JSON event per row) into log_rows, grouping events,
// and drops it; in one transaction, so a crash leaves either. Events of
// sessions that no longer exist are dropped with it. It does nothing when
// there is no events table; it runs after assignLogKeys.
func convertLegacyEvents(ctx context.Context, db *gorm.DB) (int, error) {
	if !db.Migrator().HasTable("events") {
		return 0, nil
	}
	moved := 0
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var logs []struct {
			ID     string
			LogKey int64
		}
		if err := tx.Raw(`SELECT s.id, s.log_key FROM sessions s WHERE EXISTS (SELECT 1 FROM events e WHERE e.session_id = s.id)`).Scan(&logs).Error; err != nil {
			return err
		}
		for _, l := range logs {
			id := l.ID
			rows, err := tx.Raw(`SELECT seq, body FROM events WHERE session_id = ? ORDER BY seq`, id).Rows()
			if err != nil {
				return err
			}
			var evs []session.Event
			for rows.Next() {
				var seq int64
				var body sql.RawBytes
				if err := rows.Scan(&seq, &body); err != nil {
					rows.Close()
					return err
				}
				var ev session.Event
				if err := json.Unmarshal(body, &ev); err != nil {
					rows.Close()
					return fmt.Errorf("session %s seq %d: %w", id, seq, err)
				}
				evs = append(evs, ev)
			}
			if err := rows.Close(); err != nil {
				return err
			}
			_, out, _, err := encodeEvents(evs, nil)
			if err != nil {
				return fmt.Errorf("session %s: %w", id, err)
			}
			recs := make([]LogRow, len(out))
			for i, r := range out {
				recs[i] = r.record(l.LogKey)
			}
			if len(recs) > 0 {
				if err := tx.CreateInBatches(recs, insertChunk).Error; err != nil {
					return fmt.Errorf("session %s: %w", id, err)
				}
			}
			moved += len(evs)
			todoSeq := int64(-1)
			for _, ev := range evs {
				if ev.Type == session.TypeTodoWrite {
					todoSeq = ev.Seq
				}
			}
			if err := tx.Model(&Session{}).Where("id = ?", id).UpdateColumn("todo_seq", todoSeq).Error; err != nil {
				return fmt.Errorf("session %s: %w", id, err)
			}
		}
		return tx.Exec(`DROP TABLE events`).Error
	})
	if err != nil {
		return 0, fmt.Errorf("move events to log_rows: %w", err)
	}
	return moved, nil
}

// record is the GORM form of a row.
func (r eventRow) record(logKey int64) LogRow {
	return LogRow{LogKey: logKey, Seq: r.seq, N: r.n, Time: r.time, Type: r.typ, Meta: r.meta, Body: r.body, SearchText: r.text}
}
