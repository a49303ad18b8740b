package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"harness/internal/llm"
	"harness/internal/llm/openai"
	"harness/internal/models"
)

// ModelRoutes applies admin-configured routes (the providers table) and
// the default route to the live registry, at start and after every edit,
// so a change needs no restart. Routes registered otherwise (the offline
// demo, environment keys) are left alone and their names are reserved.
type ModelRoutes struct {
	log   *slog.Logger
	reg   *llm.Registry
	store *models.SettingsStore

	mu      sync.Mutex
	managed map[string]bool // names this applies
}

// NewModelRoutes builds the applier.
func NewModelRoutes(log *slog.Logger, reg *llm.Registry, store *models.SettingsStore) *ModelRoutes {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &ModelRoutes{log: log, reg: reg, store: store, managed: map[string]bool{}}
}

// Registry is the live registry.
func (m *ModelRoutes) Registry() *llm.Registry { return m.reg }

// Store is the settings store.
func (m *ModelRoutes) Store() *models.SettingsStore { return m.store }

// Load applies every stored route and the stored default. A route that
// does not build is logged and skipped, so one bad row does not stop the
// server.
func (m *ModelRoutes) Load(ctx context.Context) error {
	pcs, err := m.store.Providers(ctx)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, pc := range pcs {
		if m.reserved(pc.Name) {
			m.log.Warn("configured model route shadows a built-in route; skipped", "name", pc.Name)
			continue
		}
		if err := m.applyLocked(pc); err != nil {
			m.log.Error("configured model route", "name", pc.Name, "err", err)
		}
	}
	return m.applyDefaultLocked(ctx)
}

// reserved: a route registered by something else.
func (m *ModelRoutes) reserved(name string) bool {
	_, ok := m.reg.Get(name)
	return ok && !m.managed[name]
}

// Managed reports whether name is an admin-configured route.
func (m *ModelRoutes) Managed(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.managed[name]
}

var routeName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// ProviderForm is an edited route as the settings form submits it.
type ProviderForm struct {
	Name         string
	Kind         string
	BaseURL      string
	APIKey       string // "" keeps the stored key
	ClearKey     bool
	DefaultModel string
	Models       string // comma or newline separated ids
	Enabled      bool
}

// Save validates, stores and applies a route.
func (m *ModelRoutes) Save(ctx context.Context, f ProviderForm) error {
	pc, err := f.config()
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reserved(pc.Name) {
		return &formError{"the name " + pc.Name + " belongs to a built-in route"}
	}
	if err := m.store.SaveProvider(ctx, pc, f.ClearKey); err != nil {
		return err
	}
	stored, err := m.store.Provider(ctx, pc.Name)
	if err != nil {
		return err
	}
	if err := m.applyLocked(stored); err != nil {
		return &formError{"saved, but the route does not work: " + err.Error()}
	}
	return m.applyDefaultLocked(ctx)
}

// Delete removes a route from the table and the registry.
func (m *ModelRoutes) Delete(ctx context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reserved(name) {
		return &formError{"built-in routes cannot be deleted here"}
	}
	if err := m.store.DeleteProvider(ctx, name); err != nil {
		return err
	}
	m.reg.Unregister(name)
	delete(m.managed, name)
	return m.applyDefaultLocked(ctx)
}

// SetDefault stores and applies the default route.
func (m *ModelRoutes) SetDefault(ctx context.Context, r models.RouteSetting) error {
	p, ok := m.reg.Get(r.Provider)
	if !ok {
		return &formError{"unknown provider " + r.Provider}
	}
	if r.Model == "" {
		r.Model = p.Info().DefaultModel
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.store.SaveDefaultRoute(ctx, r); err != nil {
		return err
	}
	return m.applyDefaultLocked(ctx)
}

// applyLocked registers (or removes, when disabled) one route.
func (m *ModelRoutes) applyLocked(pc models.ProviderConfig) error {
	if !pc.Enabled {
		m.reg.Unregister(pc.Name)
		m.managed[pc.Name] = true
		return nil
	}
	if pc.KeyError != nil { // sealed under another secret key, or altered
		m.reg.Unregister(pc.Name)
		return fmt.Errorf("route %s is unusable until its API key is entered again: %w", pc.Name, pc.KeyError)
	}
	cfg, err := openAIConfig(pc)
	if err != nil {
		return err
	}
	p, err := openai.New(cfg)
	if err != nil {
		return fmt.Errorf("route %s: %w", pc.Name, err)
	}
	if err := m.reg.Replace(p); err != nil {
		return err
	}
	m.managed[pc.Name] = true
	return nil
}

// applyDefaultLocked sets the stored default when its provider exists.
func (m *ModelRoutes) applyDefaultLocked(ctx context.Context) error {
	r, err := m.store.DefaultRoute(ctx)
	if err != nil {
		return err
	}
	if r.Provider == "" {
		return nil
	}
	if _, ok := m.reg.Get(r.Provider); ok {
		m.reg.SetDefault(r.Provider, r.Model)
	}
	return nil
}

// openAIConfig builds the adapter configuration of a stored route.
func openAIConfig(pc models.ProviderConfig) (openai.Config, error) {
	var ids []string
	if pc.Models != "" {
		if err := json.Unmarshal([]byte(pc.Models), &ids); err != nil {
			return openai.Config{}, fmt.Errorf("route %s: models: %w", pc.Name, err)
		}
	}
	cfg := openai.Config{
		Name: pc.Name, Label: pc.Name, Kind: openai.Kind(pc.Kind), BaseURL: pc.BaseURL, APIKey: pc.APIKey,
		DefaultModel: pc.DefaultModel,
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
	return cfg, nil
}

// config validates the form into a row.
func (f ProviderForm) config() (models.ProviderConfig, error) {
	name := strings.ToLower(strings.TrimSpace(f.Name))
	if !routeName.MatchString(name) {
		return models.ProviderConfig{}, &formError{"a route name has 1–64 of a-z, 0-9, '_' and '-'"}
	}
	kind := strings.TrimSpace(f.Kind)
	if kind != string(openai.KindDeepSeek) && kind != string(openai.KindOpenAI) {
		return models.ProviderConfig{}, &formError{"kind must be deepseek or openai"}
	}
	base := strings.TrimSpace(f.BaseURL)
	if base != "" {
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return models.ProviderConfig{}, &formError{"the base URL must be an http or https URL"}
		}
	} else if kind == string(openai.KindOpenAI) {
		return models.ProviderConfig{}, &formError{"an OpenAI-compatible route needs a base URL"}
	}
	key := strings.TrimSpace(f.APIKey)
	if strings.ContainsAny(key, "\r\n\t ") || len(key) > 512 {
		return models.ProviderConfig{}, &formError{"the API key must be one line without spaces"}
	}
	var ids []string
	for _, id := range strings.FieldsFunc(f.Models, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' || r == ' ' }) {
		if len(id) > 128 {
			return models.ProviderConfig{}, &formError{"a model id is at most 128 characters"}
		}
		ids = append(ids, id)
	}
	def := strings.TrimSpace(f.DefaultModel)
	if def == "" && len(ids) > 0 {
		def = ids[0]
	}
	if def == "" && kind == string(openai.KindOpenAI) {
		return models.ProviderConfig{}, &formError{"name at least one model"}
	}
	b, _ := json.Marshal(ids) // a string slice always encodes
	return models.ProviderConfig{Name: name, Kind: kind, BaseURL: base, APIKey: key, DefaultModel: def, Models: string(b), Enabled: f.Enabled}, nil
}

// formError is a message for the person who filled in a form.
type formError struct{ msg string }

func (e *formError) Error() string { return e.msg }

// formMessage returns the message of a form error, "" for other errors.
func formMessage(err error) string {
	var fe *formError
	if errors.As(err, &fe) {
		return fe.msg
	}
	return ""
}
