package service

import (
	"context"
	"slices"

	"harness/internal/auth"
	"harness/internal/llm"
	"harness/internal/models"
)

// SetEffort selects the session's reasoning effort from its next request
// on: off (no thinking), low, high or max; "" returns to the model's
// default. An effort the session's current model does not list is refused.
func (s *Service) SetEffort(ctx context.Context, a *auth.Actor, id string, effort llm.Effort) error {
	if err := checkEffort(effort); err != nil {
		return err
	}
	if _, err := s.Authorize(ctx, a, id, auth.ActionWrite); err != nil {
		return err
	}
	if err := s.setEffort(ctx, a, id, effort); err != nil {
		return err
	}
	s.emit(Change{Kind: ChangeUpdated, Session: id})
	return nil
}

func checkEffort(effort llm.Effort) error {
	if effort != "" && !effort.Known() {
		return Errorf(CodeBadRequest, "effort must be off, low, high or max (empty: the model's default)")
	}
	return nil
}

func (s *Service) setEffort(ctx context.Context, a *auth.Actor, id string, effort llm.Effort) error {
	row, err := s.store.GetSession(ctx, id)
	if err != nil {
		return s.fail(ctx, "set effort", err)
	}
	ag, release, err := s.agent(ctx, id)
	if err != nil {
		return err
	}
	defer release()
	rt := s.routeOf(row.Provider, row.Model)
	if sel := ag.Log().State().Model; sel != nil {
		rt = s.routeOf(sel.Provider, sel.Model)
	}
	if err := s.effortFits(rt, effort); err != nil {
		return err
	}
	if err := ag.SetEffort(ctx, effort, by(a)); err != nil {
		return s.fail(ctx, "set effort", err)
	}
	if err := s.store.UpdateSession(ctx, id, models.SessionUpdate{Effort: new(string(effort))}); err != nil {
		return s.fail(ctx, "set effort", err)
	}
	return nil
}

// checkPatchEffort checks a patch's effort against the route the patch
// ends on (its own, else the session's).
func (s *Service) checkPatchEffort(ctx context.Context, id string, role auth.SessionRole, p Patch) error {
	if err := checkEffort(*p.Effort); err != nil {
		return err
	}
	var rt Route
	if p.Provider != nil || p.Model != nil {
		var err error
		if rt, err = s.pickRoute(deref(p.Provider), deref(p.Model)); err != nil {
			return err
		}
	} else {
		row, err := s.store.GetSession(ctx, id)
		if err != nil {
			return s.fail(ctx, "set effort", err)
		}
		r := s.rowOf(row, role)
		rt = Route{Provider: r.Provider, Model: r.Model}
	}
	return s.effortFits(rt, *p.Effort)
}

// effortFits refuses an effort the route's model does not list.
func (s *Service) effortFits(rt Route, effort llm.Effort) error {
	if effort == "" {
		return nil
	}
	if efforts := s.modelEfforts(rt); len(efforts) > 0 && !slices.Contains(efforts, effort) {
		return Errorf(CodeBadRequest, "model %s does not support reasoning effort %q", rt.Model, effort)
	}
	return nil
}

// modelEfforts are the efforts the route's model lists (nil: it lists
// none, and any is sent as asked).
func (s *Service) modelEfforts(rt Route) []llm.Effort {
	p, ok := s.providers.Get(rt.Provider)
	if !ok {
		return nil
	}
	return p.Info().Model(rt.Model).Efforts
}
