// Package routes owns the model routes: those configured in the environment
// (DEEPSEEK_API_KEY, OPENAI_*) and those an admin stores in Settings (the
// providers table). It builds every provider one way (an openai.Config
// through Deps.Build), applies a change to the live llm.Registry and saves
// it, so an edit needs no restart, and lists the routes for the settings
// page without their keys. It also keeps users' defaults for new sessions
// (a route and a permission mode), which are checked against the routes.
//
// app loads the routes at start; the settings handlers (internal/web) parse
// a form, call this package and answer.
package routes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"harness/internal/llm"
	"harness/internal/llm/openai"
	"harness/internal/models"
)

// Store is where routes, the default route and users' preferences are
// kept (models.SettingsStore). API keys come back opened.
type Store interface {
	Providers(ctx context.Context) ([]models.ProviderConfig, error)
	Provider(ctx context.Context, name string) (models.ProviderConfig, error)
	SaveProvider(ctx context.Context, pc models.ProviderConfig, clearKey bool) error
	DeleteProvider(ctx context.Context, name string) error
	DefaultRoute(ctx context.Context) (models.RouteSetting, error)
	SaveDefaultRoute(ctx context.Context, r models.RouteSetting) error
	UserPrefs(ctx context.Context, userID string) (models.UserPrefs, error)
	SaveUserPrefs(ctx context.Context, userID string, p models.UserPrefs) error
}

// Deps are a Routes' collaborators.
type Deps struct {
	Log *slog.Logger
	// Registry is the live registry the driver resolves routes in.
	Registry *llm.Registry
	// Store keeps the admin's routes and the users' preferences.
	Store Store
	// Build makes a provider from its configuration; nil is openai.New.
	// Every route, from the environment or stored, is built by it.
	Build func(openai.Config) (llm.Provider, error)
	// OnChange is called after an admin's change was stored and applied
	// (replicas tell the others, which Load again); nil: nothing.
	OnChange func()
}

// Routes applies model routes to the live registry and stores the admin's.
// Routes registered by something else (the offline demo, the environment,
// a test's providers) are left alone and their names are reserved.
type Routes struct {
	log      *slog.Logger
	reg      *llm.Registry
	store    Store
	build    func(openai.Config) (llm.Provider, error)
	onChange func()

	// mu serialises changes, so a save and a delete of one name cannot
	// interleave between the store and the registry.
	mu sync.Mutex
	// managed are the stored routes this applied (enabled or not), with
	// the UpdatedAt of the row applied: Load skips a row already applied.
	managed map[string]time.Time
}

// New builds a Routes; it touches neither the registry nor the store.
func New(d Deps) *Routes {
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	build := d.Build
	if build == nil {
		build = func(cfg openai.Config) (llm.Provider, error) { return openai.New(cfg) }
	}
	onChange := d.OnChange
	if onChange == nil {
		onChange = func() {}
	}
	return &Routes{log: log, reg: d.Registry, store: d.Store, build: build, onChange: onChange, managed: map[string]time.Time{}}
}

// envRoutes read the environment's routes, in registration order.
var envRoutes = []func(func(string) string) (openai.Config, bool){openai.DeepSeekFromEnv, openai.OpenAIFromEnv}

// LoadEnv registers the routes configured in the environment and returns
// what it registered, in order (the caller picks the default). A route
// that does not build is an error: the operator asked for it.
func (r *Routes) LoadEnv(getenv func(string) string) ([]llm.ProviderInfo, error) {
	var out []llm.ProviderInfo
	for _, fromEnv := range envRoutes {
		cfg, ok := fromEnv(getenv)
		if !ok {
			continue
		}
		p, err := r.build(cfg)
		if err != nil {
			return out, fmt.Errorf("model route %s: %w", cfg.Name, err)
		}
		if err := r.reg.Register(p); err != nil {
			return out, fmt.Errorf("model route %s: %w", cfg.Name, err)
		}
		out = append(out, p.Info())
	}
	return out, nil
}

// Load applies every stored route and the stored default, and removes
// the stored routes it applied before that are no longer stored (another
// replica deleted them). A route that does not build is logged and
// skipped, so one bad row does not stop the server. Call it after every
// other route is registered: a stored route never shadows one of those.
func (r *Routes) Load(ctx context.Context) error {
	pcs, err := r.store.Providers(ctx)
	if err != nil {
		return fmt.Errorf("model routes from settings: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	stored := make(map[string]bool, len(pcs))
	for _, pc := range pcs {
		stored[pc.Name] = true
		if at, ok := r.managed[pc.Name]; ok && !pc.UpdatedAt.IsZero() && at.Equal(pc.UpdatedAt) {
			continue // applied as it is (another replica changed something else)
		}
		if r.reserved(pc.Name) {
			r.log.WarnContext(ctx, "configured model route shadows a built-in route; skipped", "name", pc.Name)
			continue
		}
		if err := r.applyLocked(pc); err != nil {
			r.log.ErrorContext(ctx, "configured model route", "name", pc.Name, "err", err)
		}
	}
	for name := range r.managed {
		if !stored[name] {
			r.reg.Unregister(name)
			delete(r.managed, name)
		}
	}
	return r.applyDefaultLocked(ctx)
}

// Save validates a form, stores the route and applies it; it returns the
// route's name as stored (lower case). Refusals are *InputError; a route
// that is stored but does not build is one too, as the admin must fix it.
func (r *Routes) Save(ctx context.Context, f Form) (string, error) {
	pc, err := f.config()
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reserved(pc.Name) {
		return pc.Name, inputf("the name %s belongs to a built-in route", pc.Name)
	}
	if err := r.store.SaveProvider(ctx, pc, f.ClearKey); err != nil {
		return pc.Name, err
	}
	// Read back: an empty key field kept the stored key, which the
	// provider needs.
	stored, err := r.store.Provider(ctx, pc.Name)
	if err != nil {
		return pc.Name, err
	}
	defer r.onChange() // stored: the other replicas apply it too
	if err := r.applyLocked(stored); err != nil {
		return pc.Name, inputf("saved, but the route does not work: %s", err)
	}
	return pc.Name, r.applyDefaultLocked(ctx)
}

// Delete removes a stored route from the table and the registry.
func (r *Routes) Delete(ctx context.Context, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reserved(name) {
		return inputf("built-in routes cannot be deleted here")
	}
	if err := r.store.DeleteProvider(ctx, name); err != nil {
		return err
	}
	defer r.onChange()
	r.reg.Unregister(name)
	delete(r.managed, name)
	return r.applyDefaultLocked(ctx)
}

// SetDefault stores and applies the server's default route; an empty model
// is the route's default model.
func (r *Routes) SetDefault(ctx context.Context, provider, model string) error {
	p, ok := r.reg.Get(provider)
	if !ok {
		return inputf("unknown provider %s", provider)
	}
	if model == "" {
		model = p.Info().DefaultModel
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.store.SaveDefaultRoute(ctx, models.RouteSetting{Provider: provider, Model: model}); err != nil {
		return err
	}
	defer r.onChange()
	return r.applyDefaultLocked(ctx)
}

// Available lists the live routes in registration order.
func (r *Routes) Available() []llm.ProviderInfo { return r.reg.List() }

// Lookup describes a live route.
func (r *Routes) Lookup(name string) (llm.ProviderInfo, bool) {
	p, ok := r.reg.Get(name)
	if !ok {
		return llm.ProviderInfo{}, false
	}
	return p.Info(), true
}

// Default is the server's default route and model.
func (r *Routes) Default() (provider, model string) { return r.reg.Default() }

// Managed reports whether name is a stored (admin-configured) route.
func (r *Routes) Managed(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.managed[name]
	return ok
}

// reserved: a route registered by something else. Called with mu held.
func (r *Routes) reserved(name string) bool {
	_, ok := r.reg.Get(name)
	_, managed := r.managed[name]
	return ok && !managed
}

// applyLocked registers (or removes, when disabled) one stored route.
func (r *Routes) applyLocked(pc models.ProviderConfig) error {
	if !pc.Enabled {
		r.reg.Unregister(pc.Name)
		r.managed[pc.Name] = pc.UpdatedAt
		return nil
	}
	if pc.KeyError != nil { // sealed under another secret key, or altered
		r.reg.Unregister(pc.Name)
		return fmt.Errorf("route %s is unusable until its API key is entered again: %w", pc.Name, pc.KeyError)
	}
	cfg, err := storedConfig(pc)
	if err != nil {
		return err
	}
	p, err := r.build(cfg)
	if err != nil {
		return fmt.Errorf("route %s: %w", pc.Name, err)
	}
	if err := r.reg.Replace(p); err != nil {
		return fmt.Errorf("route %s: %w", pc.Name, err)
	}
	r.managed[pc.Name] = pc.UpdatedAt
	return nil
}

// applyDefaultLocked sets the stored default when its route exists; a
// default naming a deleted route leaves the registry's as it is.
func (r *Routes) applyDefaultLocked(ctx context.Context) error {
	d, err := r.store.DefaultRoute(ctx)
	if err != nil {
		return err
	}
	if d.Provider == "" {
		return nil
	}
	if _, ok := r.reg.Get(d.Provider); ok {
		r.reg.SetDefault(d.Provider, d.Model)
	}
	return nil
}

// storedConfig builds the adapter configuration of a stored route.
func storedConfig(pc models.ProviderConfig) (openai.Config, error) {
	var ids []string
	if pc.Models != "" {
		if err := json.Unmarshal([]byte(pc.Models), &ids); err != nil {
			return openai.Config{}, fmt.Errorf("route %s: models: %w", pc.Name, err)
		}
	}
	cfg := openai.Config{
		Name: pc.Name, Label: pc.Name, Kind: openai.Kind(pc.Kind), BaseURL: pc.BaseURL, APIKey: pc.APIKey,
		DefaultModel: pc.DefaultModel, ImageInput: pc.ImageInput,
	}
	switch cfg.Kind {
	case openai.KindDeepSeek:
		if cfg.BaseURL == "" {
			cfg.BaseURL = openai.DeepSeekBaseURL
		}
		cfg.Thinking = true
		cfg.DefaultEffort = llm.EffortHigh
		cfg.Models = openai.DeepSeekModels()
		if cfg.DefaultModel == "" {
			cfg.DefaultModel = openai.DeepSeekFlash
		}
		cfg.Label = pc.Name + " (DeepSeek)"
	case openai.KindOpenAI:
		cfg.Label = pc.Name + " (OpenAI-compatible)"
	default:
		return openai.Config{}, fmt.Errorf("route %s: kind must be deepseek or openai", pc.Name)
	}
	known := map[string]bool{}
	for _, mi := range cfg.Models {
		known[mi.ID] = true
	}
	for _, id := range ids {
		if !known[id] {
			cfg.Models = append(cfg.Models, llm.ModelInfo{ID: id, Label: id})
			known[id] = true
		}
	}
	if cfg.DefaultModel == "" && len(cfg.Models) > 0 {
		cfg.DefaultModel = cfg.Models[0].ID
	}
	if cfg.DefaultModel != "" && !known[cfg.DefaultModel] {
		cfg.Models = append([]llm.ModelInfo{{ID: cfg.DefaultModel, Label: cfg.DefaultModel}}, cfg.Models...)
	}
	// The admin's prices and window hold for every model of the route; a
	// copy, so the adapter's catalog is never changed in place.
	price := routePrice(pc)
	cfg.Models = slices.Clone(cfg.Models)
	for i := range cfg.Models {
		if price != nil {
			cfg.Models[i].Price = price
		}
		if pc.ContextWindow > 0 {
			cfg.Models[i].ContextWindow = pc.ContextWindow
		}
	}
	return cfg, nil
}

// routePrice is a stored route's price list, nil when it has none.
func routePrice(pc models.ProviderConfig) *llm.Price {
	if pc.InputPrice == nil || pc.OutputPrice == nil {
		return nil
	}
	p := &llm.Price{Input: *pc.InputPrice, CachedInput: *pc.InputPrice, Output: *pc.OutputPrice}
	if pc.CachedInputPrice != nil {
		p.CachedInput = *pc.CachedInputPrice
	}
	return p
}

// InputError is a refusal worded for the person who filled in a form.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

func inputf(format string, args ...any) error {
	return &InputError{Msg: fmt.Sprintf(format, args...)}
}

// InputMessage returns the message of an *InputError in err's chain, ""
// for any other error (a failure the person cannot fix).
func InputMessage(err error) string {
	if e, ok := errors.AsType[*InputError](err); ok {
		return e.Msg
	}
	return ""
}
