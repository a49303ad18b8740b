package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Attachment is an image uploaded to a session; the session's log refers
// to it by ID from image blocks (never holding the bytes).
//
// The bytes are a column of the row, not a file under the data
// directory: replicas on one PostgreSQL database serve and send any
// session's images without a shared filesystem, a session's delete takes
// its images in the same transaction, and a backup of the database is
// complete. Attachments are capped (10 MiB by default), small enough for
// a blob or bytea column.
//
// The key is (session, id): a fork copies its seed's attachments under
// the same ids, so the copied log's references hold in the child.
type Attachment struct {
	SessionID string `gorm:"primaryKey;size:36"`
	// ID is also indexed alone: an import finds images by id.
	ID         string `gorm:"primaryKey;size:36;index:idx_attachments_id"`
	UploaderID string `gorm:"size:36;not null"`
	// Name is the uploaded file's name (for the transcript's alt text).
	Name string `gorm:"size:255;not null;default:''"`
	// MediaType is sniffed from the bytes: image/png, image/jpeg,
	// image/gif or image/webp.
	MediaType string `gorm:"size:64;not null"`
	Size      int64  `gorm:"not null"`
	Width     int    `gorm:"not null"`
	Height    int    `gorm:"not null"`
	SHA256    string `gorm:"size:64;not null"`
	Data      []byte `gorm:"not null"`
	CreatedAt time.Time
}

// metaColumns are every column but the bytes.
var metaColumns = []string{"session_id", "id", "uploader_id", "name", "media_type", "size", "width", "height", "sha256", "created_at"}

// CreateAttachment stores a. The session must exist: on PostgreSQL its
// row is locked for share, so a delete that runs meanwhile either sees
// the attachment (and deletes it) or comes first (and the insert finds no
// session).
func (s *Store) CreateAttachment(ctx context.Context, a *Attachment) error {
	if a.SessionID == "" || a.ID == "" {
		return errors.New("create attachment: empty session or id")
	}
	if a.CreatedAt.IsZero() {
		a.CreatedAt = now()
	}
	a.CreatedAt = a.CreatedAt.UTC().Truncate(time.Microsecond)
	err := s.DB.W.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		q := tx.Model(&Session{}).Select("id").Where("id = ?", a.SessionID)
		if s.pg() {
			q = q.Clauses(clause.Locking{Strength: "SHARE"})
		}
		var ids []string
		if err := q.Pluck("id", &ids).Error; err != nil {
			return err
		}
		if len(ids) == 0 {
			return fmt.Errorf("session %s: %w", a.SessionID, ErrNotFound)
		}
		return tx.Create(a).Error
	})
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return fmt.Errorf("create attachment %s: %w", a.ID, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("create attachment %s: %w", a.ID, err)
	}
	return nil
}

// AttachmentMeta reads an attachment without its bytes.
func (s *Store) AttachmentMeta(ctx context.Context, sessionID, id string) (*Attachment, error) {
	return s.attachment(ctx, sessionID, id, metaColumns)
}

// AttachmentData reads an attachment with its bytes.
func (s *Store) AttachmentData(ctx context.Context, sessionID, id string) (*Attachment, error) {
	return s.attachment(ctx, sessionID, id, nil)
}

func (s *Store) attachment(ctx context.Context, sessionID, id string, cols []string) (*Attachment, error) {
	var a Attachment
	q := s.DB.R.WithContext(ctx).Where("session_id = ? AND id = ?", sessionID, id)
	if cols != nil {
		q = q.Select(cols)
	}
	err := q.Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("attachment %s of session %s: %w", id, sessionID, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("attachment %s of session %s: %w", id, sessionID, err)
	}
	return &a, nil
}

// ListAttachments lists a session's attachments without their bytes,
// oldest first.
func (s *Store) ListAttachments(ctx context.Context, sessionID string) ([]Attachment, error) {
	var out []Attachment
	err := s.DB.R.WithContext(ctx).Select(metaColumns).Where("session_id = ?", sessionID).
		Order("created_at, id").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("list attachments of session %s: %w", sessionID, err)
	}
	return out, nil
}

// CopyAttachments copies the attachments ids of session from to session
// to, under the same ids (a fork's seed refers to them); ids that from
// does not hold, or that to holds already, are skipped. The bytes are
// copied by the database, not through the server.
func (s *Store) CopyAttachments(ctx context.Context, from, to string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	conflict := "ON CONFLICT (session_id, id) DO NOTHING"
	err := s.DB.W.WithContext(ctx).Exec(`INSERT INTO attachments
		(session_id, id, uploader_id, name, media_type, size, width, height, sha256, data, created_at)
		SELECT ?, id, uploader_id, name, media_type, size, width, height, sha256, data, created_at
		FROM attachments WHERE session_id = ? AND id IN ? `+conflict, to, from, ids).Error
	if err != nil {
		return fmt.Errorf("copy attachments from %s to %s: %w", from, to, err)
	}
	return nil
}

// AttachmentsByID lists, without their bytes, the attachments with these
// ids in any session (an import looks for the images its log refers to).
func (s *Store) AttachmentsByID(ctx context.Context, ids []string) ([]Attachment, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []Attachment
	err := s.DB.R.WithContext(ctx).Select(metaColumns).Where("id IN ?", ids).Order("created_at, session_id").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("attachments by id: %w", err)
	}
	return out, nil
}
