package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"harness/internal/auth"
)

// sessionAccessSQL reads, in one round trip, a session's owner, the user's
// membership and the user's current role and status.
//
// A subagent's child session is read through its parent: its access facts
// are the parent's (owner and the user's membership there), and ParentID
// says so. The join on the parent is what lets a session be reached by
// anyone who may read its parent and by nobody else; a child whose parent
// is gone (or is itself a child) has no owner and no members, so it is
// found by no one but admins.
const sessionAccessSQL = `SELECT COALESCE(p.owner_id, CASE WHEN s.kind = 'subagent' THEN '' ELSE s.owner_id END),
  m.role, u.id, u.role, u.disabled, CASE WHEN s.kind = 'subagent' THEN s.parent_id ELSE '' END
FROM sessions s
LEFT JOIN sessions p ON s.kind = 'subagent' AND p.id = s.parent_id AND p.kind <> 'subagent'
LEFT JOIN members m ON m.session_id = (CASE WHEN s.kind = 'subagent' THEN p.id ELSE s.id END) AND m.user_id = ?
LEFT JOIN users u ON u.id = ?
WHERE s.id = ?`

// SessionAccess returns what Authorize needs about (sessionID, userID);
// auth.ErrNotFound when the session does not exist.
func (s *AuthStore) SessionAccess(ctx context.Context, sessionID, userID string) (auth.Access, error) {
	var (
		owner, parent     string
		member, uid, role sql.NullString
		disabled          sql.NullBool
	)
	err := s.db.R.WithContext(ctx).Raw(sessionAccessSQL, userID, userID, sessionID).Row().
		Scan(&owner, &member, &uid, &role, &disabled, &parent)
	if errors.Is(err, sql.ErrNoRows) {
		return auth.Access{}, fmt.Errorf("session %s: %w", sessionID, auth.ErrNotFound)
	}
	if err != nil {
		return auth.Access{}, authErr("session access", err)
	}
	return auth.Access{
		OwnerID: owner, MemberRole: auth.SessionRole(member.String),
		UserFound: uid.Valid, UserRole: auth.Role(role.String), UserDisabled: disabled.Bool,
		ParentID: parent,
	}, nil
}

// PutMember grants or changes a member's role.
func (s *AuthStore) PutMember(ctx context.Context, sessionID, userID string, role auth.SessionRole, at time.Time) error {
	row := Member{SessionID: sessionID, UserID: userID, Role: string(role), CreatedAt: utc(at)}
	err := s.db.W.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "session_id"}, {Name: "user_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"role"}),
	}).Create(&row).Error
	if err != nil {
		return authErr("put member", err)
	}
	return nil
}

// DeleteMember removes a grant; auth.ErrNotFound if there was none.
func (s *AuthStore) DeleteMember(ctx context.Context, sessionID, userID string) error {
	res := s.db.W.WithContext(ctx).Where("session_id = ? AND user_id = ?", sessionID, userID).Delete(&Member{})
	return affected("delete member", res)
}

// memberRow is ListMembers' join result.
type memberRow struct {
	SessionID   string
	UserID      string
	Name        string
	DisplayName string
	Role        string
	CreatedAt   time.Time
}

// ListMembers lists a session's members with their names, by name.
func (s *AuthStore) ListMembers(ctx context.Context, sessionID string) ([]auth.Member, error) {
	var rows []memberRow
	err := s.db.R.WithContext(ctx).Table("members AS m").
		Select("m.session_id, m.user_id, u.name, u.display_name, m.role, m.created_at").
		Joins("JOIN users u ON u.id = m.user_id").
		Where("m.session_id = ?", sessionID).Order("u.name").Scan(&rows).Error
	if err != nil {
		return nil, authErr("list members", err)
	}
	out := make([]auth.Member, len(rows))
	for i, r := range rows {
		out[i] = auth.Member{
			SessionID: r.SessionID, UserID: r.UserID, Name: r.Name, DisplayName: r.DisplayName,
			Role: auth.SessionRole(r.Role), CreatedAt: r.CreatedAt.UTC(),
		}
	}
	return out, nil
}

// ForgetSession deletes a session's members and share links.
func (s *AuthStore) ForgetSession(ctx context.Context, sessionID string) error {
	return s.db.W.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, m := range []any{&Member{}, &ShareLink{}} {
			if err := tx.Where("session_id = ?", sessionID).Delete(m).Error; err != nil {
				return authErr("forget session grants", err)
			}
		}
		return nil
	})
}
