package routes

import (
	"context"

	"harness/internal/models"
	"harness/internal/session"
)

// Prefs are a user's defaults for new sessions: a route, a model (""
// is the route's default) and a permission mode.
type Prefs struct {
	Provider string
	Model    string
	Mode     session.PermissionMode
}

// Prefs reads a user's preferences (zero when unset).
func (r *Routes) Prefs(ctx context.Context, userID string) (Prefs, error) {
	p, err := r.store.UserPrefs(ctx, userID)
	return Prefs{Provider: p.Provider, Model: p.Model, Mode: p.Mode}, err
}

// SavePrefs checks and stores a user's preferences: the mode is ask, auto
// or read-only and the route is live. Refusals are *InputError.
func (r *Routes) SavePrefs(ctx context.Context, userID string, p Prefs) error {
	switch p.Mode {
	case session.ModeAsk, session.ModeAuto, session.ModeReadOnly:
	default:
		return inputf("Choose ask, auto or read-only.")
	}
	if _, ok := r.reg.Get(p.Provider); !ok {
		return inputf("That model is not available.")
	}
	return r.store.SaveUserPrefs(ctx, userID, models.UserPrefs{Provider: p.Provider, Model: p.Model, Mode: p.Mode})
}

// Preferred is the "provider/model" a new session of someone with p
// starts on: the preferred route while it is live, else the server's
// default.
func (r *Routes) Preferred(p Prefs) (provider, model string) {
	if p.Provider != "" {
		if info, ok := r.Lookup(p.Provider); ok {
			m := p.Model
			if m == "" {
				m = info.DefaultModel
			}
			return p.Provider, m
		}
	}
	return r.reg.Default()
}
