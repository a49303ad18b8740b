package service

import (
	"context"

	"harness/internal/auth"
	"harness/internal/session"
)

// CurrentTodos is a session's todo list for a reader: the live log's when
// the session is loaded (it may be ahead of the store), else the last one
// stored. It does not load the session.
func (s *Service) CurrentTodos(ctx context.Context, a *auth.Actor, id string) ([]session.Todo, error) {
	if _, err := s.Authorize(ctx, a, id, auth.ActionRead); err != nil {
		return nil, err
	}
	if ag, ok := s.mgr.Lookup(id); ok {
		return ag.Log().State().Todos, nil
	}
	todos, err := s.store.LastTodos(ctx, id)
	if err != nil {
		return nil, s.fail(ctx, "todo list", err)
	}
	return todos, nil
}
