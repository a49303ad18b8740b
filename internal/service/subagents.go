package service

import (
	"context"
	"fmt"
)

// deleteChildren removes the subagent sessions of parent: their agents,
// rows and logs. Their workspace is the parent's and stays for the
// parent's own deletion.
func (s *Service) deleteChildren(ctx context.Context, parent string) error {
	kids, err := s.store.ChildSessions(ctx, parent)
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := s.mgr.Remove(ctx, k.ID); err != nil {
			return fmt.Errorf("stop subagent %s: %w", k.ID, err)
		}
		if err := s.store.Flush(ctx, k.ID); err != nil {
			s.log.WarnContext(ctx, "flush before delete", "session", k.ID, "err", err)
		}
		if err := s.store.DeleteSession(ctx, k.ID); err != nil && !isNotFound(err) {
			return fmt.Errorf("delete subagent %s: %w", k.ID, err)
		}
		s.store.Forget(k.ID)
	}
	return nil
}
