package service

import (
	"context"
	"strings"

	"harness/internal/auth"
	"harness/internal/models"
	"harness/internal/session"
)

// pickRoute resolves a requested route: no provider means the default
// route (a model alone is refused); no model means the provider's default.
func (s *Service) pickRoute(provider, model string) (Route, error) {
	if provider == "" {
		if model != "" {
			return Route{}, Errorf(CodeBadRequest, "a model needs its provider")
		}
		p, m := s.providers.Default()
		return Route{Provider: p, Model: m}, nil
	}
	p, ok := s.providers.Get(provider)
	if !ok {
		return Route{}, Errorf(CodeBadRequest, "unknown provider %q", provider)
	}
	if model == "" {
		model = p.Info().DefaultModel
	}
	return Route{Provider: provider, Model: model}, nil
}

// routeOf completes a stored route with the defaults.
func (s *Service) routeOf(provider, model string) Route {
	if provider == "" {
		p, m := s.providers.Default()
		return Route{Provider: p, Model: m}
	}
	if model == "" {
		if p, ok := s.providers.Get(provider); ok {
			model = p.Info().DefaultModel
		}
	}
	return Route{Provider: provider, Model: model}
}

// SetMode changes the session's permission mode (read-only, ask, auto).
func (s *Service) SetMode(ctx context.Context, a *auth.Actor, id string, mode session.PermissionMode) error {
	if !validMode(mode) {
		return Errorf(CodeBadRequest, "mode must be read-only, ask or auto")
	}
	if _, err := s.Authorize(ctx, a, id, auth.ActionWrite); err != nil {
		return err
	}
	if err := s.setMode(ctx, a, id, mode); err != nil {
		return err
	}
	s.emit(Change{Kind: ChangeUpdated, Session: id})
	return nil
}

func (s *Service) setMode(ctx context.Context, a *auth.Actor, id string, mode session.PermissionMode) error {
	ag, release, err := s.agent(ctx, id)
	if err != nil {
		return err
	}
	defer release()
	if err := ag.SetMode(ctx, mode, by(a)); err != nil {
		return s.fail(ctx, "set mode", err)
	}
	if err := s.store.UpdateSession(ctx, id, models.SessionUpdate{Mode: new(string(mode))}); err != nil {
		return s.fail(ctx, "set mode", err)
	}
	return nil
}

// SetModel selects the route used from the session's next request on; an
// empty model is the provider's default.
func (s *Service) SetModel(ctx context.Context, a *auth.Actor, id, provider, model string) error {
	if provider == "" {
		return Errorf(CodeBadRequest, "provider is required")
	}
	if _, err := s.pickRoute(provider, model); err != nil {
		return err
	}
	if _, err := s.Authorize(ctx, a, id, auth.ActionWrite); err != nil {
		return err
	}
	if err := s.setModel(ctx, a, id, provider, model); err != nil {
		return err
	}
	s.emit(Change{Kind: ChangeUpdated, Session: id})
	return nil
}

func (s *Service) setModel(ctx context.Context, a *auth.Actor, id, provider, model string) error {
	rt, err := s.pickRoute(provider, model)
	if err != nil {
		return err
	}
	ag, release, err := s.agent(ctx, id)
	if err != nil {
		return err
	}
	defer release()
	if err := ag.SetModel(ctx, rt.Provider, rt.Model, by(a)); err != nil {
		return s.fail(ctx, "set model", err)
	}
	if err := s.store.UpdateSession(ctx, id, models.SessionUpdate{Provider: &rt.Provider, Model: &rt.Model}); err != nil {
		return s.fail(ctx, "set model", err)
	}
	return nil
}

// Providers lists the model routes (never their secrets) and the default;
// the embedded demo model is labelled as the offline demo.
func (s *Service) Providers(ctx context.Context, a *auth.Actor) (Providers, error) {
	if err := s.requireUser(a); err != nil {
		return Providers{}, err
	}
	p, m := s.providers.Default()
	out := Providers{Default: Route{Provider: p, Model: m}, Providers: []Provider{}}
	for _, info := range s.providers.List() {
		label := info.Label
		if info.Offline && !strings.Contains(strings.ToLower(label), "offline") {
			label += " (offline demo)"
		}
		out.Providers = append(out.Providers, Provider{
			Name: info.Name, Label: label, Offline: info.Offline, ImageInput: info.ImageInput,
			DefaultModel: info.DefaultModel, Models: info.Models,
		})
	}
	return out, nil
}
