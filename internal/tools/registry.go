package tools

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// validName is what OpenAI-compatible providers accept as a function name.
var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// entry is a registered definition with its compiled schema.
type entry struct {
	def Definition
	// schema is the compiled parameter schema: compiled by newEntry, or on
	// first use for a definition added with RegisterLazy.
	schema func() (*jsonschema.Resolved, error)
}

// newEntry checks d and compiles its schema.
func newEntry(d Definition) (*entry, error) {
	e, err := newLazyEntry(d)
	if err != nil {
		return nil, err
	}
	if _, err := e.schema(); err != nil {
		return nil, fmt.Errorf("tool %q: %w", d.Name, err)
	}
	return e, nil
}

// newLazyEntry checks d but compiles its schema on first use.
func newLazyEntry(d Definition) (*entry, error) {
	if !validName.MatchString(d.Name) {
		return nil, fmt.Errorf("tool name %q: must match %s", d.Name, validName)
	}
	if d.Execute == nil {
		return nil, fmt.Errorf("tool %q: Execute is nil", d.Name)
	}
	switch d.Access {
	case AccessRead, AccessWrite, AccessExec, AccessInteract, AccessNetwork:
	default:
		return nil, fmt.Errorf("tool %q: unknown access %q", d.Name, d.Access)
	}
	if d.Timeout < 0 {
		return nil, fmt.Errorf("tool %q: negative timeout", d.Name)
	}
	d.Parameters = append([]byte(nil), d.Parameters...) // own the bytes
	return &entry{def: d, schema: sync.OnceValues(func() (*jsonschema.Resolved, error) {
		return compileSchema(d.Name, d.Parameters)
	})}, nil
}

// ErrDuplicate is returned when a name is already registered in the same
// registry or scope.
var ErrDuplicate = errors.New("tool already registered")

// Registry holds the global tool definitions shared by every agent. It is
// safe for concurrent use; changes are seen by the next classification or
// lookup (the scheduler re-reads before each start).
type Registry struct {
	mu   sync.RWMutex
	defs map[string]*entry
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{defs: map[string]*entry{}}
}

// Register validates d (name, access, body, schema) and adds it.
func (r *Registry) Register(d Definition) error {
	e, err := newEntry(d)
	if err != nil {
		return err
	}
	return r.add(e)
}

func (r *Registry) add(e *entry) error {
	d := e.def
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.defs[d.Name]; dup {
		return fmt.Errorf("register %q: %w", d.Name, ErrDuplicate)
	}
	r.defs[d.Name] = e
	return nil
}

// RegisterLazy is Register that checks d now but compiles its parameter
// schema on first use, so a server start does not parse and resolve schemas
// of tools it may not call for a while. Use it for static
// schemas that a test compiles (a broken one then fails its calls with
// INVALID_ARGS, never a panic).
func (r *Registry) RegisterLazy(d Definition) error {
	e, err := newLazyEntry(d)
	if err != nil {
		return err
	}
	return r.add(e)
}

// MustRegister is Register for wiring code with static definitions; it
// panics on error, which is a programming mistake, never bad input.
func (r *Registry) MustRegister(d Definition) {
	if err := r.Register(d); err != nil {
		panic(err)
	}
}

// Unregister removes a global tool and reports whether it existed.
func (r *Registry) Unregister(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.defs[name]
	delete(r.defs, name)
	return ok
}

// Names returns the registered global names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.defs))
	for n := range r.defs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewScope returns a per-agent view of the registry with its own tool state.
func (r *Registry) NewScope() *Scope {
	return &Scope{reg: r, scoped: map[string]*entry{}, state: NewAgentState()}
}

func (r *Registry) get(name string) (*entry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.defs[name]
	return e, ok
}

func (r *Registry) snapshot() map[string]*entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make(map[string]*entry, len(r.defs))
	for n, e := range r.defs {
		out[n] = e
	}
	return out
}
