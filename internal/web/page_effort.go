package web

import (
	"encoding/json"

	"harness/internal/llm"
	"harness/web/templates"
)

// effortRoute is one model of the header's route map (EffortView.Routes).
type effortRoute struct {
	ID      string       `json:"id"`
	Efforts []llm.Effort `json:"efforts"`
	Default llm.Effort   `json:"default,omitempty"`
}

// effortView fills the header's reasoning-effort control for the session's
// route; writers also get every route's efforts, for a live model switch.
func (s *Server) effortView(provider, model string, current llm.Effort, canWrite bool) templates.EffortView {
	v := templates.EffortView{Current: string(current), CanWrite: canWrite}
	if info, ok := s.ui.Routes.Lookup(provider); ok {
		m := info.Model(model)
		v.Default = string(m.DefaultEffort)
		for _, e := range m.Efforts {
			v.Options = append(v.Options, string(e))
		}
	}
	if !canWrite {
		return v
	}
	routes := map[string][]effortRoute{}
	for _, p := range s.ui.Routes.Available() {
		list := []effortRoute{}
		for _, m := range p.Models {
			list = append(list, effortRoute{ID: m.ID, Efforts: m.Efforts, Default: m.DefaultEffort})
		}
		routes[p.Name] = list
	}
	if b, err := json.Marshal(routes); err == nil {
		v.Routes = string(b)
	}
	return v
}
