package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"harness/internal/session"
)

// CreateSessionWithLog inserts a session row together with its whole log
// (events contiguous from seq 0) in one transaction: both are stored or
// neither is, also when the process dies half way. It is for imports; the
// batched writer takes the session's later appends (it reads the stored
// head the first time it writes the session). Rows are encoded as the
// writer encodes them (encodeEvents: groups, search text).
func (s *Store) CreateSessionWithLog(ctx context.Context, sess *Session, events []session.Event) error {
	if sess.OwnerID == "" {
		return errors.New("create session with log: empty owner")
	}
	if sess.ID == "" {
		sess.ID = uuid.NewString()
	}
	for i, ev := range events {
		if ev.Seq != int64(i) {
			return fmt.Errorf("create session %s with log: event %d has seq %d", sess.ID, i, ev.Seq)
		}
	}
	_, encoded, _, err := encodeEvents(events, nil)
	if err != nil {
		return fmt.Errorf("create session %s with log: %w", sess.ID, err)
	}
	head := int64(len(events)) - 1
	sess.Head = head
	if sess.CreatedAt.IsZero() {
		sess.CreatedAt = now()
	}
	sess.CreatedAt = sess.CreatedAt.UTC().Truncate(time.Microsecond)
	if sess.UpdatedAt.IsZero() {
		sess.UpdatedAt = sess.CreatedAt
	}
	sess.UpdatedAt = sess.UpdatedAt.UTC().Truncate(time.Microsecond)
	err = s.DB.W.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := createSessionRow(tx, s.pg(), sess); err != nil {
			return err
		}
		rows := make([]LogRow, len(encoded))
		for i, r := range encoded {
			rows[i] = r.record(sess.LogKey)
		}
		// GORM writes a zero head as the column default (-1) and reads
		// that back into sess: set it, and what the writer keeps.
		todoSeq := int64(-1)
		for _, ev := range events {
			if ev.Type == session.TypeTodoWrite {
				todoSeq = ev.Seq
			}
		}
		if err := tx.Model(&Session{}).Where("id = ?", sess.ID).UpdateColumns(map[string]any{"head": head, "todo_seq": todoSeq}).Error; err != nil {
			return err
		}
		sess.Head, sess.TodoSeq = head, todoSeq
		if len(rows) == 0 {
			return nil
		}
		return tx.CreateInBatches(rows, insertChunk).Error
	})
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return fmt.Errorf("create session %s: %w", sess.ID, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("create session %s with log: %w", sess.ID, err)
	}
	return nil
}
