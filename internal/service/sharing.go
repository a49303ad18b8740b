package service

import (
	"context"
	"time"

	"harness/internal/auth"
)

// Sharing is what a session's sharing page shows.
type Sharing struct {
	Row     SessionRow
	Members []Member
	Links   []ShareLink
}

// Sharing returns the session's row, members and share links, authorized
// once (ActionShare).
func (s *Service) Sharing(ctx context.Context, a *auth.Actor, id string) (Sharing, error) {
	role, err := s.Authorize(ctx, a, id, auth.ActionShare)
	if err != nil {
		return Sharing{}, err
	}
	row, err := s.store.GetSession(ctx, id)
	if err != nil {
		return Sharing{}, s.fail(ctx, "get session", err)
	}
	out := Sharing{Row: s.rowOf(row, role)}
	if out.Members, err = s.members(ctx, id); err != nil {
		return Sharing{}, err
	}
	if out.Links, err = s.links(ctx, id); err != nil {
		return Sharing{}, err
	}
	return out, nil
}

// Members lists the session's members (the owner is not one).
func (s *Service) Members(ctx context.Context, a *auth.Actor, id string) ([]Member, error) {
	if _, err := s.Authorize(ctx, a, id, auth.ActionShare); err != nil {
		return nil, err
	}
	return s.members(ctx, id)
}

func (s *Service) members(ctx context.Context, id string) ([]Member, error) {
	ms, err := s.auth.ListMembers(ctx, id)
	if err != nil {
		return nil, s.fail(ctx, "list members", err)
	}
	out := make([]Member, 0, len(ms))
	for _, m := range ms {
		out = append(out, Member{UserID: m.UserID, Name: m.Name, DisplayName: m.DisplayName, Role: m.Role, CreatedAt: m.CreatedAt})
	}
	return out, nil
}

// AddMember grants the user named name a role (collaborator or viewer),
// replacing an earlier grant.
func (s *Service) AddMember(ctx context.Context, a *auth.Actor, id, name string, role auth.SessionRole) error {
	if name == "" {
		return Errorf(CodeBadRequest, "name is required")
	}
	if _, err := s.Authorize(ctx, a, id, auth.ActionShare); err != nil {
		return err
	}
	if err := s.auth.AddMember(ctx, id, name, role); err != nil {
		return s.fail(ctx, "add member", err)
	}
	s.emit(Change{Kind: ChangeUpdated, Session: id})
	return nil
}

// RemoveMember revokes a member's grant.
func (s *Service) RemoveMember(ctx context.Context, a *auth.Actor, id, name string) error {
	if name == "" {
		return Errorf(CodeBadRequest, "name is required")
	}
	if _, err := s.Authorize(ctx, a, id, auth.ActionShare); err != nil {
		return err
	}
	u, err := s.auth.GetUser(ctx, name)
	if err != nil {
		return s.fail(ctx, "remove member", err)
	}
	if err := s.auth.RemoveMember(ctx, id, name); err != nil {
		return s.fail(ctx, "remove member", err)
	}
	s.emit(Change{Kind: ChangeRevoked, Session: id, Users: []string{u.ID}})
	return nil
}

// ShareLinks lists the session's share links, revoked and expired ones
// included (tokens are never shown again).
func (s *Service) ShareLinks(ctx context.Context, a *auth.Actor, id string) ([]ShareLink, error) {
	if _, err := s.Authorize(ctx, a, id, auth.ActionShare); err != nil {
		return nil, err
	}
	return s.links(ctx, id)
}

func (s *Service) links(ctx context.Context, id string) ([]ShareLink, error) {
	ls, err := s.auth.ListShareLinks(ctx, id)
	if err != nil {
		return nil, s.fail(ctx, "list share links", err)
	}
	out := make([]ShareLink, 0, len(ls))
	for _, l := range ls {
		out = append(out, linkOf(l))
	}
	return out, nil
}

// CreateShareLink makes a read-only live transcript link; expiresAt nil
// means no expiry. The token is in the result only.
func (s *Service) CreateShareLink(ctx context.Context, a *auth.Actor, id string, expiresAt *time.Time) (NewShareLink, error) {
	if _, err := s.Authorize(ctx, a, id, auth.ActionShare); err != nil {
		return NewShareLink{}, err
	}
	token, linkID, err := s.auth.CreateShareLink(ctx, id, a.UserID, expiresAt)
	if err != nil {
		return NewShareLink{}, s.fail(ctx, "create share link", err)
	}
	ls, err := s.auth.ListShareLinks(ctx, id)
	if err != nil {
		return NewShareLink{}, s.fail(ctx, "create share link", err)
	}
	out := NewShareLink{Token: token, Path: "/s/" + token}
	for _, l := range ls {
		if l.ID == linkID {
			out.ShareLink = linkOf(l)
		}
	}
	return out, nil
}

// RevokeShareLink revokes one link; its viewers are refused from their next
// request, and the WebSocket drops their subscriptions.
func (s *Service) RevokeShareLink(ctx context.Context, a *auth.Actor, id, linkID string) error {
	if linkID == "" {
		return Errorf(CodeBadRequest, "link id is required")
	}
	if _, err := s.Authorize(ctx, a, id, auth.ActionShare); err != nil {
		return err
	}
	if err := s.auth.RevokeShareLink(ctx, id, linkID); err != nil {
		return s.fail(ctx, "revoke share link", err)
	}
	return nil
}

func linkOf(l auth.ShareLink) ShareLink {
	return ShareLink{ID: l.ID, CreatedBy: l.CreatedBy, CreatedAt: l.CreatedAt, ExpiresAt: l.ExpiresAt, RevokedAt: l.RevokedAt}
}
