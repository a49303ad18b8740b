package service

import (
	"context"

	"github.com/google/uuid"

	"harness/internal/auth"
	"harness/internal/llm"
	"harness/internal/models"
	"harness/internal/session"
	"harness/internal/workspace"
)

// Fork starts a new session owned by a from the source's log prefix
// [0, atSeq] (nil: the whole log). The point must lie at a completed turn
// boundary (else CodeOpenTurn). See the package documentation.
func (s *Service) Fork(ctx context.Context, a *auth.Actor, id string, atSeq *int64) (Session, error) {
	if err := s.requireUser(a); err != nil {
		return Session{}, err
	}
	boundary := int64(-1)
	if atSeq != nil {
		if *atSeq < 0 {
			return Session{}, Errorf(CodeBadRequest, "atSeq must be a seq (>= 0)")
		}
		boundary = *atSeq
	}
	if _, err := s.Authorize(ctx, a, id, auth.ActionFork); err != nil {
		return Session{}, err
	}
	src, err := s.store.GetSession(ctx, id)
	if err != nil {
		return Session{}, s.fail(ctx, "fork", err)
	}
	seed, err := s.mgr.ForkSeed(ctx, id, boundary)
	if err != nil {
		return Session{}, s.fail(ctx, "fork", err)
	}
	if reason := notReady(src); reason != "" {
		// Its files are not all there: a copy of them would look whole.
		return Session{}, Errorf(CodeWorkspaceNotReady, "cannot fork now: %s", reason)
	}
	parent := s.rowOf(src, auth.SessionRoleNone)
	childID := uuid.NewString()
	// Until the copy's outcome is recorded, no repair here may settle it.
	defer s.jobs.track(childID)()
	dir, err := s.ws.CreateFresh(childID)
	if err != nil {
		return Session{}, s.fail(ctx, "fork: create workspace", err)
	}
	row := &models.Session{
		ID: childID, OwnerID: a.UserID, Title: parent.Title, Workspace: dir,
		WorkspaceKind: string(workspace.KindFork), WorkspaceSource: id,
		Provider: parent.Provider, Model: parent.Model, Mode: string(parent.Mode),
		ParentID: id, ForkSeq: int64(len(seed)) - 1, SeedLength: int64(len(seed)),
		Effort: string(seedEffort(seed)),
		// Preparing until the copy's outcome is logged: a crash during the
		// copy leaves a state the next start repairs (repairFork).
		WorkspaceState: models.WorkspacePreparing,
	}
	if err := s.newSession(ctx, row, seed); err != nil {
		return Session{}, err
	}
	s.copyAttachments(ctx, id, childID, seed)
	s.copyForFork(ctx, src, childID, dir)
	s.log.InfoContext(ctx, "session forked", "session", childID, "parent", id, "at", row.ForkSeq, "owner", a.UserID)
	s.emit(Change{Kind: ChangeUpdated, Session: childID})
	return s.get(ctx, childID, auth.SessionRoleOwner)
}

// seedEffort is the reasoning effort the seed's log chose last (the child's
// log goes on with it), "" when none.
func seedEffort(seed []session.Event) llm.Effort {
	for i := len(seed) - 1; i >= 0; i-- {
		if seed[i].Type == session.TypeEffortSelected {
			if e, err := session.Decode[session.EffortSelected](seed[i]); err == nil {
				return e.Effort
			}
			return ""
		}
	}
	return ""
}

// copyAttachments copies the images the seed's messages refer to into the
// child, under the same ids, so the copied log's references hold there
// (and outlive the parent). A copy that fails is logged: the child's
// transcript then shows those images as unavailable and its model gets a
// text note in their place.
func (s *Service) copyAttachments(ctx context.Context, parent, child string, seed []session.Event) {
	var msgs []llm.Message
	for _, ev := range seed {
		if ev.Type != session.TypeUserMessage {
			continue
		}
		if m, err := session.Decode[llm.Message](ev); err == nil {
			msgs = append(msgs, m)
		}
	}
	if err := s.store.CopyAttachments(ctx, parent, child, attachmentIDs(msgs)); err != nil {
		s.log.ErrorContext(ctx, "fork: copy images", "session", child, "parent", parent, "err", err)
	}
}
