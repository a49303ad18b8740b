package models

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
)

// SessionUpdate is a change to a session row: a nil field is left as it
// is. Only what callers change after creation is here; head and todo_seq
// are the writer's, id, owner_id and created_at never change, and the
// workspace columns have their own setters (they do not touch updated_at).
type SessionUpdate struct {
	Title    *string
	Archived *bool
	Mode     *string // permission mode
	Effort   *string // reasoning effort ("" = the route's default)
	Provider *string
	Model    *string
	// PendingInbox is the count of queue items not yet claimed.
	PendingInbox *int
	// UpdatedAt sets updated_at; nil bumps it to now.
	UpdatedAt *time.Time
}

// columns are the update's columns for GORM: a map, so that zero values
// (false, 0, "") are written too.
func (u SessionUpdate) columns() map[string]any {
	cols := map[string]any{}
	if u.Title != nil {
		cols["title"] = *u.Title
	}
	if u.Archived != nil {
		cols["archived"] = *u.Archived
	}
	if u.Mode != nil {
		cols["mode"] = *u.Mode
	}
	if u.Effort != nil {
		cols["effort"] = *u.Effort
	}
	if u.Provider != nil {
		cols["provider"] = *u.Provider
	}
	if u.Model != nil {
		cols["model"] = *u.Model
	}
	if u.PendingInbox != nil {
		cols["pending_inbox"] = *u.PendingInbox
	}
	if u.UpdatedAt != nil {
		cols["updated_at"] = u.UpdatedAt.UTC().Truncate(time.Microsecond)
	}
	return cols
}

// CreateSession inserts a session row with an empty log (head -1). An empty
// ID gets a new UUID; timestamps default to now.
func (s *Store) CreateSession(ctx context.Context, sess *Session) error {
	if sess.OwnerID == "" {
		return errors.New("create session: empty owner")
	}
	if sess.ID == "" {
		sess.ID = uuid.NewString()
	}
	sess.Head = -1
	if sess.CreatedAt.IsZero() {
		sess.CreatedAt = now()
	}
	sess.CreatedAt = sess.CreatedAt.UTC().Truncate(time.Microsecond)
	if sess.UpdatedAt.IsZero() {
		sess.UpdatedAt = sess.CreatedAt
	}
	sess.UpdatedAt = sess.UpdatedAt.UTC().Truncate(time.Microsecond)
	err := s.DB.W.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return createSessionRow(tx, s.pg(), sess)
	})
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return fmt.Errorf("create session %s: %w", sess.ID, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("create session %s: %w", sess.ID, err)
	}
	return nil
}

// GetSession reads one session row.
func (s *Store) GetSession(ctx context.Context, id string) (*Session, error) {
	var sess Session
	err := s.DB.R.WithContext(ctx).Where("id = ?", id).Take(&sess).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get session %s: %w", id, err)
	}
	return &sess, nil
}

// SessionIDByPrefix returns the id of the session whose id is prefix or,
// failing that, of the one session whose id starts with it, for an
// operator who pasted the first characters of an id. Only lower-case hex
// and dashes (a UUID's characters) are matched as a prefix, so nothing in
// prefix is a LIKE wildcard; two matches are an error naming both.
func (s *Store) SessionIDByPrefix(ctx context.Context, prefix string) (string, error) {
	var ids []string
	if err := s.DB.R.WithContext(ctx).Model(&Session{}).Where("id = ?", prefix).Limit(1).Pluck("id", &ids).Error; err != nil {
		return "", fmt.Errorf("find session %s: %w", prefix, err)
	}
	if len(ids) == 0 && prefix != "" && strings.Trim(prefix, "0123456789abcdef-") == "" {
		err := s.DB.R.WithContext(ctx).Model(&Session{}).Where("id LIKE ?", prefix+"%").Order("id").Limit(2).Pluck("id", &ids).Error
		if err != nil {
			return "", fmt.Errorf("find session %s: %w", prefix, err)
		}
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("session %s: %w", prefix, ErrNotFound)
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("session %s: the prefix matches several sessions (%s, %s, ...); give more of the id", prefix, ids[0], ids[1])
}

// UpdateSession sets the fields of u that are not nil and bumps
// updated_at unless u sets it. An empty update changes nothing.
func (s *Store) UpdateSession(ctx context.Context, id string, u SessionUpdate) error {
	set := u.columns()
	if len(set) == 0 {
		return nil
	}
	if _, ok := set["updated_at"]; !ok {
		set["updated_at"] = now()
	}
	res := s.DB.W.WithContext(ctx).Model(&Session{}).Where("id = ?", id).Updates(set)
	if res.Error != nil {
		return fmt.Errorf("update session %s: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	return nil
}

// DeleteSession deletes the session row, its events, members, share
// links and attachments in one transaction, and drops events still queued for it.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	err := s.DB.W.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// The session row goes first: on PostgreSQL this waits for a batch
		// that holds the row, so that batch's events are deleted below; a
		// batch that comes later finds no row and is refused.
		var keys []int64
		if err := tx.Model(&Session{}).Where("id = ?", id).Pluck("log_key", &keys).Error; err != nil {
			return err
		}
		res := tx.Where("id = ?", id).Delete(&Session{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 || len(keys) == 0 {
			return ErrNotFound
		}
		if err := tx.Where("log_key = ?", keys[0]).Delete(&LogRow{}).Error; err != nil {
			return err
		}
		for _, m := range []any{&Member{}, &ShareLink{}, &Attachment{}} {
			if err := tx.Where("session_id = ?", id).Delete(m).Error; err != nil {
				return err
			}
		}
		if s.DB.Driver == DriverPostgres {
			// Replicas mirroring the session end their subscriptions
			// (head -1: deleted), at the commit.
			if err := tx.Exec(`SELECT pg_notify(?, ?)`, s.DB.Channel(HeadsChannel), id+":"+strconv.Itoa(DeletedHead)).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	if s.W != nil {
		s.W.Forget(id)
	}
	return nil
}

// ListQuery selects sessions for ListSessions.
type ListQuery struct {
	OwnerID       string // required unless All
	IncludeShared bool   // also sessions where OwnerID is a member
	All           bool   // every session (admin)
	// Query is a case-insensitive search in titles and in the text of
	// people's and the model's messages.
	Query    string
	Archived *bool // nil: both
	Limit    int   // default 50, at most 500
	Before   *Cursor
}

// Cursor is a keyset position in the (updated_at desc, id desc) order.
type Cursor struct {
	UpdatedAt time.Time `json:"updatedAt"`
	ID        string    `json:"id"`
}

const (
	defaultListLimit = 50
	maxListLimit     = 500
)

// ListSessions returns sessions newest first (updated_at desc, id desc) and
// the cursor of the next page, nil on the last page.
func (s *Store) ListSessions(ctx context.Context, q ListQuery) ([]Session, *Cursor, error) {
	if !q.All && q.OwnerID == "" {
		return nil, nil, errors.New("list sessions: empty owner")
	}
	limit := q.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	limit = min(limit, maxListLimit)

	// Subagent children are shown inside their parent's transcript.
	db := s.DB.R.WithContext(ctx).Model(&Session{}).Where("kind <> ?", KindSubagent)
	if !q.All {
		if q.IncludeShared {
			db = db.Where("(owner_id = ? OR id IN (SELECT session_id FROM members WHERE user_id = ?))", q.OwnerID, q.OwnerID)
		} else {
			db = db.Where("owner_id = ?", q.OwnerID)
		}
	}
	if q.Archived != nil {
		db = db.Where("archived = ?", *q.Archived)
	}
	if text := strings.TrimSpace(q.Query); text != "" {
		pat := "%" + escapeLike(strings.ToLower(text)) + "%"
		like := "LIKE"
		if s.pg() {
			like = "ILIKE"
		}
		db = db.Where(`(title `+like+` ? ESCAPE '\' OR EXISTS (SELECT 1 FROM log_rows WHERE log_rows.log_key = sessions.log_key AND `+
			boundaryFilter+` AND type IN ('user/message','assistant/message') AND search_text LIKE ? ESCAPE '\'))`, pat, pat)
	}
	if c := q.Before; c != nil {
		t := c.UpdatedAt.UTC()
		db = db.Where("(updated_at < ? OR (updated_at = ? AND id < ?))", t, t, c.ID)
	}
	var rows []Session
	if err := db.Order("updated_at DESC, id DESC").Limit(limit + 1).Find(&rows).Error; err != nil {
		return nil, nil, fmt.Errorf("list sessions: %w", err)
	}
	var next *Cursor
	if len(rows) > limit {
		rows = rows[:limit]
		last := rows[limit-1]
		next = &Cursor{UpdatedAt: last.UpdatedAt, ID: last.ID}
	}
	return rows, next, nil
}

// escapeLike escapes LIKE wildcards for ESCAPE '\'.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// ChildSessions lists the subagent sessions of parent, oldest first.
func (s *Store) ChildSessions(ctx context.Context, parent string) ([]Session, error) {
	var rows []Session
	err := s.DB.R.WithContext(ctx).Where("parent_id = ? AND kind = ?", parent, KindSubagent).Order("created_at, id").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("child sessions of %s: %w", parent, err)
	}
	return rows, nil
}

// SessionsWithPendingInbox lists sessions with queued inbox items, oldest
// activity first (they are resumed at server start).
func (s *Store) SessionsWithPendingInbox(ctx context.Context) ([]Session, error) {
	var rows []Session
	err := s.DB.R.WithContext(ctx).Where("pending_inbox > 0").Order("updated_at, id").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("sessions with pending inbox: %w", err)
	}
	return rows, nil
}

// Head returns the last stored seq of a session (-1 when its log is empty).
func (s *Store) Head(ctx context.Context, id string) (int64, error) {
	var head int64
	err := s.DB.r.QueryRowContext(ctx, s.q("SELECT head FROM sessions WHERE id = ?"), id).Scan(&head)
	if err != nil {
		return 0, s.lookupErr("head of session", id, err)
	}
	return head, nil
}

// lookupErr wraps a single-row lookup error, mapping no rows to ErrNotFound.
func (s *Store) lookupErr(what, id string, err error) error {
	if isNoRows(err) {
		return fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	return fmt.Errorf("%s %s: %w", what, id, err)
}
