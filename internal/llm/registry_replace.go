package llm

import (
	"errors"
	"slices"
)

// Replace registers p under its name, replacing a provider of that name
// if there is one (it keeps its place in the order). Settings pages use it
// to apply an edited route without a restart.
func (r *Registry) Replace(p Provider) error {
	if p == nil {
		return errors.New("replace provider: nil provider")
	}
	name := p.Info().Name
	if name == "" {
		return errors.New("replace provider: empty name")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byName == nil {
		r.byName = make(map[string]Provider)
	}
	if _, ok := r.byName[name]; !ok {
		r.order = append(r.order, name)
	}
	r.byName[name] = p
	return nil
}

// Unregister removes the provider registered under name and reports
// whether there was one. When it was the default route, the default falls
// back to the first registered provider.
func (r *Registry) Unregister(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byName[name]; !ok {
		return false
	}
	delete(r.byName, name)
	r.order = slices.DeleteFunc(r.order, func(n string) bool { return n == name })
	if r.defProvider == name {
		r.defProvider, r.defModel, r.defaultIsSet = "", "", false
	}
	return true
}
