package auth

import (
	"context"
	"fmt"
)

// AddMember grants userName a role (collaborator or viewer) on a session,
// replacing any previous grant. The caller has authorized ActionManage.
func (s *Service) AddMember(ctx context.Context, sessionID, userName string, role SessionRole) error {
	if role != SessionRoleCollaborator && role != SessionRoleViewer {
		return invalid("member role %q: want collaborator or viewer", role)
	}
	u, err := s.userByName(ctx, userName)
	if err != nil {
		return err
	}
	acc, err := s.store.SessionAccess(ctx, sessionID, u.ID)
	if err != nil {
		return fmt.Errorf("session %s: %w", sessionID, err)
	}
	if acc.OwnerID == u.ID {
		return invalid("%s owns the session", u.Name)
	}
	if err := s.store.PutMember(ctx, sessionID, u.ID, role, s.now()); err != nil {
		return fmt.Errorf("add member %s to %s: %w", u.Name, sessionID, err)
	}
	s.log.InfoContext(ctx, "member added", "session", sessionID, "user", u.Name, "role", role)
	return nil
}

// RemoveMember revokes userName's grant on a session.
func (s *Service) RemoveMember(ctx context.Context, sessionID, userName string) error {
	u, err := s.userByName(ctx, userName)
	if err != nil {
		return err
	}
	if err := s.store.DeleteMember(ctx, sessionID, u.ID); err != nil {
		return fmt.Errorf("remove member %s from %s: %w", u.Name, sessionID, err)
	}
	s.notify(ctx, AccessChange{UserID: u.ID})
	s.log.InfoContext(ctx, "member removed", "session", sessionID, "user", u.Name)
	return nil
}

// ListMembers lists a session's grants (the owner is not a member).
func (s *Service) ListMembers(ctx context.Context, sessionID string) ([]Member, error) {
	ms, err := s.store.ListMembers(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("list members of %s: %w", sessionID, err)
	}
	return ms, nil
}

// ForgetSession drops a deleted session's members and share links; the
// session store's delete calls it.
func (s *Service) ForgetSession(ctx context.Context, sessionID string) error {
	if err := s.store.ForgetSession(ctx, sessionID); err != nil {
		return fmt.Errorf("forget grants of %s: %w", sessionID, err)
	}
	return nil
}
