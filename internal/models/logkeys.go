package models

import (
	"context"
	"fmt"

	"gorm.io/gorm"
)

// Log keys. Every row of log_rows names its session by Session.LogKey, a
// small integer, rather than by the 36-character id: one or two bytes
// instead of 37, in every row and in the boundary index. Keys count up
// from 1; a unique index keeps two sessions from ever sharing a log.

// logKeyIndex is the unique index on sessions.log_key (created once every
// row has its key).
const logKeyIndex = `CREATE UNIQUE INDEX IF NOT EXISTS idx_sessions_log_key ON sessions (log_key)`

// logKeySeq is PostgreSQL's sequence of keys; SQLite, whose writes are
// serialised, takes the largest key plus one in the same statement.
const logKeySeq = `sessions_log_key_seq`

// assignLogKeys is a schema step: sessions from before log keys get theirs
// (in creation order), then the unique index and, on PostgreSQL, the
// sequence new keys are drawn from. A second run changes nothing.
func assignLogKeys(ctx context.Context, db *DB) error {
	return db.W.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var ids []string
		if err := tx.Model(&Session{}).Where("log_key = 0").Order("created_at, id").Pluck("id", &ids).Error; err != nil {
			return err
		}
		var next int64
		if err := tx.Model(&Session{}).Select("COALESCE(MAX(log_key), 0)").Scan(&next).Error; err != nil {
			return err
		}
		for _, id := range ids {
			next++
			if err := tx.Model(&Session{}).Where("id = ?", id).UpdateColumn("log_key", next).Error; err != nil {
				return err
			}
		}
		if err := tx.Exec(logKeyIndex).Error; err != nil {
			return err
		}
		if db.Driver != DriverPostgres {
			return nil
		}
		if err := tx.Exec(`CREATE SEQUENCE IF NOT EXISTS ` + logKeySeq).Error; err != nil {
			return err
		}
		return tx.Exec(`SELECT setval('` + logKeySeq + `', GREATEST((SELECT COALESCE(MAX(log_key), 0) FROM sessions), 1), (SELECT COUNT(*) > 0 FROM sessions))`).Error
	})
}

// createSessionRow inserts sess and gives it its log key, in tx (which
// must be a transaction, so a session never exists without its key).
func createSessionRow(tx *gorm.DB, pg bool, sess *Session) error {
	if err := tx.Create(sess).Error; err != nil {
		return err
	}
	next := `(SELECT COALESCE(MAX(log_key), 0) + 1 FROM sessions)`
	if pg {
		next = `nextval('` + logKeySeq + `')`
	}
	var key int64
	if err := tx.Raw(`UPDATE sessions SET log_key = `+next+` WHERE id = ? RETURNING log_key`, sess.ID).Scan(&key).Error; err != nil {
		return fmt.Errorf("log key: %w", err)
	}
	if key <= 0 {
		return fmt.Errorf("log key: none assigned to session %s", sess.ID)
	}
	sess.LogKey = key
	return nil
}
