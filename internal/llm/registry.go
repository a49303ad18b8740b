package llm

import (
	"errors"
	"fmt"
	"sync"
)

// Registry holds the configured provider routes by name and the default
// route. It is safe for concurrent use.
type Registry struct {
	mu           sync.RWMutex
	order        []string
	byName       map[string]Provider
	defProvider  string
	defModel     string
	defaultIsSet bool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byName: make(map[string]Provider)}
}

// Register adds p under its Info().Name; a duplicate name is an error.
func (r *Registry) Register(p Provider) error {
	if p == nil {
		return errors.New("register provider: nil provider")
	}
	name := p.Info().Name
	if name == "" {
		return errors.New("register provider: empty name")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byName == nil {
		r.byName = make(map[string]Provider)
	}
	if _, dup := r.byName[name]; dup {
		return fmt.Errorf("register provider %q: duplicate provider name", name)
	}
	r.byName[name] = p
	r.order = append(r.order, name)
	return nil
}

// Get returns the provider registered under name.
func (r *Registry) Get(name string) (Provider, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.byName[name]
	return p, ok
}

// List returns the routes' descriptions in registration order.
func (r *Registry) List() []ProviderInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]ProviderInfo, 0, len(r.order))
	for _, name := range r.order {
		out = append(out, r.byName[name].Info())
	}
	return out
}

// SetDefault sets the default route. An empty model means the provider's
// own default model.
func (r *Registry) SetDefault(name, model string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.defProvider, r.defModel, r.defaultIsSet = name, model, true
}

// Default returns the default route: the one set with SetDefault, else the
// first registered provider and its default model. Both are empty when
// nothing is registered.
func (r *Registry) Default() (provider, model string) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	name, model := r.defProvider, r.defModel
	if !r.defaultIsSet {
		if len(r.order) == 0 {
			return "", ""
		}
		name = r.order[0]
	}
	if model == "" {
		if p, ok := r.byName[name]; ok {
			model = p.Info().DefaultModel
		}
	}
	return name, model
}
