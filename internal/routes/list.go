package routes

import (
	"context"
	"encoding/json"
	"fmt"
)

// Source says where a route is configured.
type Source string

// Route sources.
const (
	// SourceBuiltIn is the offline demo model.
	SourceBuiltIn Source = "built in"
	// SourceEnv is a route registered at start from the environment (or by
	// the embedding program); it cannot be edited here.
	SourceEnv Source = "from the environment"
	// SourceStored is a route an admin stored in Settings.
	SourceStored Source = "stored"
)

// Route is a route as the settings page lists it. It never holds the API
// key, only whether one is set.
type Route struct {
	Name   string
	Label  string
	Source Source
	// Kind is a stored route's adapter (deepseek, openai); "" otherwise.
	Kind         string
	BaseURL      string
	KeySet       bool
	DefaultModel string
	// Models are a stored route's own model ids.
	Models  []string
	Enabled bool
	Offline bool
	// A stored route's prices per million tokens (nil: not set) and
	// context window (0: the adapter's).
	InputPrice, CachedInputPrice, OutputPrice *float64
	ContextWindow                             int64
	// ImageInput: the route takes images.
	ImageInput bool
}

// Editable reports whether the settings page may change the route.
func (r Route) Editable() bool { return r.Source == SourceStored }

// List returns the live routes in registration order, a stored route in
// place of its live one, then the stored routes that are not live
// (disabled, or failing to build).
func (r *Routes) List(ctx context.Context) ([]Route, error) {
	stored, err := r.store.Providers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list model routes: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Route
	at := map[string]int{}
	for _, info := range r.reg.List() {
		rt := Route{Name: info.Name, Label: info.Label, Source: SourceEnv, DefaultModel: info.DefaultModel, Enabled: true, Offline: info.Offline, ImageInput: info.ImageInput}
		if info.Offline {
			rt.Source = SourceBuiltIn
		}
		at[info.Name] = len(out)
		out = append(out, rt)
	}
	for _, pc := range stored {
		var ids []string
		_ = json.Unmarshal([]byte(pc.Models), &ids) // a bad list shows as empty; Load logged it
		rt := Route{
			Name: pc.Name, Label: pc.Name, Source: SourceStored, Kind: pc.Kind, BaseURL: pc.BaseURL, KeySet: pc.APIKey != "",
			DefaultModel: pc.DefaultModel, Models: ids, Enabled: pc.Enabled,
			InputPrice: pc.InputPrice, CachedInputPrice: pc.CachedInputPrice, OutputPrice: pc.OutputPrice, ContextWindow: pc.ContextWindow,
			ImageInput: pc.ImageInput,
		}
		if i, ok := at[pc.Name]; ok {
			if _, ok := r.managed[pc.Name]; !ok {
				continue // shadowed by a built-in route
			}
			rt.Label = out[i].Label
			out[i] = rt
			continue
		}
		out = append(out, rt)
	}
	return out, nil
}
