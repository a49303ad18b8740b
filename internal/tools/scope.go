package tools

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"harness/internal/llm"
)

// restriction filters inherited global tools. A nil allow list allows every
// name; deny always wins.
type restriction struct {
	allow map[string]bool // nil: no allow filter
	deny  map[string]bool
}

func (r restriction) permits(name string) bool {
	if r.deny[name] {
		return false
	}
	return r.allow == nil || r.allow[name]
}

func toSet(names []string) map[string]bool {
	if names == nil {
		return nil
	}
	s := make(map[string]bool, len(names))
	for _, n := range names {
		s[n] = true
	}
	return s
}

// Scope is one agent's view of the tools: the registry's globals, filtered by
// restrictions, shadowed by tools registered on the scope itself. It also
// owns the agent's tool state (file observations).
type Scope struct {
	reg          *Registry
	mu           sync.RWMutex
	scoped       map[string]*entry
	restrictions []restriction
	state        *AgentState
}

// Register adds an agent-scoped tool; it shadows a global of the same name
// and is exempt from restrictions.
func (s *Scope) Register(d Definition) error {
	e, err := newEntry(d)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.scoped[d.Name]; dup {
		return fmt.Errorf("register scoped %q: %w", d.Name, ErrDuplicate)
	}
	s.scoped[d.Name] = e
	return nil
}

// Unregister removes a scoped tool (the global, if any, becomes visible
// again) and reports whether it existed.
func (s *Scope) Unregister(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.scoped[name]
	delete(s.scoped, name)
	return ok
}

// Restrict filters inherited globals: when allow is non-nil only those names
// stay visible; names in deny are hidden. Successive restrictions intersect.
// Scoped tools are not affected.
func (s *Scope) Restrict(allow, deny []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.restrictions = append(s.restrictions, restriction{allow: toSet(allow), deny: toSet(deny)})
}

// State returns the agent's tool state.
func (s *Scope) State() *AgentState { return s.state }

func (s *Scope) lookup(name string) (*entry, bool) {
	s.mu.RLock()
	if e, ok := s.scoped[name]; ok {
		s.mu.RUnlock()
		return e, true
	}
	visible := s.inheritsLocked(name)
	s.mu.RUnlock()
	if !visible {
		return nil, false
	}
	return s.reg.get(name)
}

func (s *Scope) inheritsLocked(name string) bool {
	for _, r := range s.restrictions {
		if !r.permits(name) {
			return false
		}
	}
	return true
}

// Lookup returns the visible definition of name.
func (s *Scope) Lookup(name string) (Definition, bool) {
	e, ok := s.lookup(name)
	if !ok {
		return Definition{}, false
	}
	return e.def, true
}

// Schemas returns what the model sees of every visible tool, sorted by name.
func (s *Scope) Schemas() []llm.ToolSchema { return s.SchemasWithout("") }

// SchemasWithout is Schemas leaving out the tools of one access (the
// driver leaves out network tools while a session's network is off, so the
// model is not offered a tool that can only be refused).
func (s *Scope) SchemasWithout(omit Access) []llm.ToolSchema {
	visible := map[string]*entry{}
	globals := s.reg.snapshot()
	s.mu.RLock()
	for n, e := range globals {
		if s.inheritsLocked(n) {
			visible[n] = e
		}
	}
	for n, e := range s.scoped {
		visible[n] = e
	}
	s.mu.RUnlock()
	out := make([]llm.ToolSchema, 0, len(visible))
	for _, e := range visible {
		if omit != "" && e.def.Access == omit {
			continue
		}
		out = append(out, e.def.Schema())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ExecutionMode classifies a call now. Unknown tools, a missing classifier, a
// classifier panic or any answer but true are exclusive (fail closed).
func (s *Scope) ExecutionMode(name string, args json.RawMessage) Mode {
	m, _ := s.classify(name, args)
	return m
}

// classify is ExecutionMode that also returns a recovered classifier panic.
func (s *Scope) classify(name string, args json.RawMessage) (mode Mode, panicked any) {
	e, ok := s.lookup(name)
	if !ok || e.def.ConcurrencySafe == nil {
		return ModeExclusive, nil
	}
	defer func() {
		if v := recover(); v != nil {
			mode, panicked = ModeExclusive, v
		}
	}()
	if e.def.ConcurrencySafe(args) {
		return ModeParallel, nil
	}
	return ModeExclusive, nil
}
