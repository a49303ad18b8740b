package routes_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/llm/openai"
	"harness/internal/models"
	"harness/internal/routes"
	"harness/internal/secrets"
	"harness/internal/session"
)

// env is a registry holding one built-in route ("builtin", as the demo
// would be) and a Routes over a real SQLite settings store.
type env struct {
	db     *models.DB
	store  *models.SettingsStore
	reg    *llm.Registry
	routes *routes.Routes
}

func newEnv(t *testing.T) *env {
	t.Helper()
	// A real SQLite file; the package's tests need no more of the stack
	// than the settings tables.
	db, err := models.Open(t.Context(), slog.New(slog.DiscardHandler), models.Config{Driver: models.DriverSQLite, DSN: filepath.Join(t.TempDir(), "h.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close the database: %v", err)
		}
	})
	sealer, err := secrets.NewSealer(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{db: db, store: models.NewSettingsStore(db, sealer)}
	e.restart(t)
	return e
}

// restart builds a fresh registry and Routes over the same database, as a
// server start does.
func (e *env) restart(t *testing.T) {
	t.Helper()
	e.reg = llm.NewRegistry()
	builtin, err := openai.New(openai.Config{Name: "builtin", Kind: openai.KindOpenAI, BaseURL: "http://127.0.0.1:1", DefaultModel: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.reg.Register(builtin); err != nil {
		t.Fatal(err)
	}
	e.routes = routes.New(routes.Deps{Registry: e.reg, Store: e.store})
	if err := e.routes.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// answer runs one model call on the live route name and returns its text.
func answer(t *testing.T, reg *llm.Registry, name, model string) string {
	t.Helper()
	p, ok := reg.Get(name)
	if !ok {
		t.Fatalf("route %s is not live", name)
	}
	var a llm.Assembler
	req := llm.Request{CallConfig: llm.CallConfig{Provider: name, Model: model}, Messages: []llm.Message{llm.UserText("hi", llm.Source{Kind: llm.SourceUser})}}
	if err := llm.Run(context.Background(), p, req, func(c llm.Chunk) error { a.Add(c); return nil }); err != nil {
		t.Fatalf("route %s: %v", name, err)
	}
	return a.Message(llm.NewID(), llm.Source{Kind: llm.SourceModel}).Text()
}

func TestSaveAppliesAndPersists(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := fake.NewServer(fake.Script{Replies: []fake.Reply{{Text: "from local"}, {Text: "after restart"}}}, fake.WithChunkDelay(0))
	base := srv.Start(t)
	const key = "sk-local-secret"

	name, err := e.routes.Save(t.Context(), routes.Form{Name: " Local ", Kind: "openai", BaseURL: base, APIKey: key, Models: "m1, m2", Enabled: true})
	if err != nil || name != "local" {
		t.Fatalf("save: %q, %v", name, err)
	}
	if got := answer(t, e.reg, "local", "m1"); got != "from local" {
		t.Errorf("the saved route answered %q", got)
	}
	if h := srv.Requests()[0].Header.Get("Authorization"); h != "Bearer "+key {
		t.Errorf("the route sent Authorization %q", h)
	}
	if !e.routes.Managed("local") || e.routes.Managed("builtin") {
		t.Error("Managed: want local only")
	}

	// An edit without a key keeps the stored one.
	if _, err := e.routes.Save(t.Context(), routes.Form{Name: "local", Kind: "openai", BaseURL: base, Models: "m1, m2, m3", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if pc, err := e.store.Provider(t.Context(), "local"); err != nil || pc.APIKey != key {
		t.Fatalf("stored key after an edit without one: %q, %v", pc.APIKey, err)
	}
	if info, _ := e.routes.Lookup("local"); len(info.Models) != 3 {
		t.Errorf("live models after the edit: %+v", info.Models)
	}
	if err := e.routes.SetDefault(t.Context(), "local", "m2"); err != nil {
		t.Fatal(err)
	}

	// A restart applies the stored route and the stored default.
	e.restart(t)
	if p, m := e.routes.Default(); p != "local" || m != "m2" {
		t.Errorf("default after a restart: %s/%s", p, m)
	}
	if got := answer(t, e.reg, "local", "m2"); got != "after restart" {
		t.Errorf("the reloaded route answered %q", got)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		name string
		do   func(ctx context.Context) error
		want string
	}{
		{"a built-in name", func(ctx context.Context) error {
			_, err := e.routes.Save(ctx, routes.Form{Name: "builtin", Kind: "deepseek"})
			return err
		}, "belongs to a built-in route"},
		{"delete a built-in route", func(ctx context.Context) error { return e.routes.Delete(ctx, "builtin") }, "cannot be deleted"},
		{"default on an unknown route", func(ctx context.Context) error { return e.routes.SetDefault(ctx, "gone", "") }, "unknown provider gone"},
		{"a bad form", func(ctx context.Context) error {
			_, err := e.routes.Save(ctx, routes.Form{Name: "Bad Name", Kind: "openai"})
			return err
		}, "a route name has"},
		{"prefs with a bad mode", func(ctx context.Context) error {
			return e.routes.SavePrefs(ctx, "u1", routes.Prefs{Provider: "builtin", Mode: "yolo"})
		}, "Choose ask, auto or read-only."},
		{"prefs on an unknown route", func(ctx context.Context) error {
			return e.routes.SavePrefs(ctx, "u1", routes.Prefs{Provider: "gone", Mode: session.ModeAuto})
		}, "That model is not available."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.do(t.Context())
			if got := routes.InputMessage(err); !strings.Contains(got, c.want) {
				t.Errorf("error %v (message %q), want %q", err, got, c.want)
			}
		})
	}
	if _, ok := e.reg.Get("builtin"); !ok {
		t.Error("a refused change removed the built-in route")
	}
}

func TestDisableDeleteAndDefaultFallback(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base := fake.NewServer(fake.Script{}).Start(t)
	ctx := t.Context()
	if _, err := e.routes.Save(ctx, routes.Form{Name: "local", Kind: "openai", BaseURL: base, Models: "m", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if err := e.routes.SetDefault(ctx, "local", ""); err != nil {
		t.Fatal(err)
	}
	if p, m := e.routes.Default(); p != "local" || m != "m" {
		t.Fatalf("default %s/%s, want local/m (the route's default model)", p, m)
	}

	// Disabled: out of the registry, still listed and still the admin's.
	if _, err := e.routes.Save(ctx, routes.Form{Name: "local", Kind: "openai", BaseURL: base, Models: "m"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.reg.Get("local"); ok {
		t.Error("a disabled route is live")
	}
	list, err := e.routes.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list, func(r routes.Route) bool { return r.Name == "local" })
	if i < 0 || list[i].Enabled || !list[i].Editable() {
		t.Fatalf("list %+v: want local, disabled and editable", list)
	}

	if err := e.routes.Delete(ctx, "local"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Provider(ctx, "local"); !errors.Is(err, models.ErrNotFound) {
		t.Errorf("the deleted route is still stored: %v", err)
	}
	if p, _ := e.routes.Default(); p != "builtin" {
		t.Errorf("default after deleting its route: %s, want the first route", p)
	}
	// A restart with a stored default naming a deleted route keeps the
	// registry's.
	e.restart(t)
	if p, _ := e.routes.Default(); p != "builtin" {
		t.Errorf("default after a restart: %s", p)
	}
}

func TestListHidesKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base := fake.NewServer(fake.Script{}).Start(t)
	const key = "sk-never-shown"
	if _, err := e.routes.Save(t.Context(), routes.Form{Name: "local", Kind: "openai", BaseURL: base, APIKey: key, Models: "a b", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	list, err := e.routes.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []routes.Route{
		{Name: "builtin", Label: "builtin", Source: routes.SourceEnv, DefaultModel: "b", Enabled: true},
		{Name: "local", Label: "local (OpenAI-compatible)", Source: routes.SourceStored, Kind: "openai", BaseURL: base, KeySet: true,
			DefaultModel: "a", Models: []string{"a", "b"}, Enabled: true},
	}
	if len(list) != len(want) {
		t.Fatalf("list %+v", list)
	}
	for i := range want {
		if got := list[i]; got.Name != want[i].Name || got.Label != want[i].Label || got.Source != want[i].Source ||
			got.KeySet != want[i].KeySet || got.DefaultModel != want[i].DefaultModel || !slices.Equal(got.Models, want[i].Models) {
			t.Errorf("route %d = %+v, want %+v", i, got, want[i])
		}
	}
	if s := strings.Join([]string{list[1].Label, list[1].BaseURL, list[1].Kind, strings.Join(list[1].Models, "")}, " "); strings.Contains(s, key) {
		t.Error("the list holds the API key")
	}
}

func TestLoadSkipsAnUnopenableKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base := fake.NewServer(fake.Script{}).Start(t)
	ctx := t.Context()
	for _, name := range []string{"good", "sealed"} {
		if _, err := e.routes.Save(ctx, routes.Form{Name: name, Kind: "openai", BaseURL: base, APIKey: "sk-" + name, Models: "m", Enabled: true}); err != nil {
			t.Fatal(err)
		}
	}
	// The same database opened with another secret key: "sealed"'s key
	// no longer opens; "good" is re-saved with a key the new sealer sealed.
	other, err := secrets.NewSealer(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	e.store = models.NewSettingsStore(e.db, other)
	if err := e.store.SaveProvider(ctx, models.ProviderConfig{Name: "good", Kind: "openai", BaseURL: base, APIKey: "sk-good", DefaultModel: "m", Models: `["m"]`, Enabled: true}, false); err != nil {
		t.Fatal(err)
	}
	e.restart(t)
	if _, ok := e.reg.Get("good"); !ok {
		t.Error("one unopenable key stopped the other routes")
	}
	if _, ok := e.reg.Get("sealed"); ok {
		t.Error("a route whose key cannot be opened is live")
	}
}

func TestLoadEnv(t *testing.T) {
	t.Parallel()
	base := fake.NewServer(fake.Script{Replies: []fake.Reply{{Text: "from the environment"}}}, fake.WithChunkDelay(0)).Start(t)
	cases := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"none", nil, nil},
		{"openai-compatible", map[string]string{"OPENAI_BASE_URL": base, "OPENAI_MODEL": "m"}, []string{"openai"}},
		{"both", map[string]string{"DEEPSEEK_API_KEY": "sk-d", "OPENAI_API_KEY": "sk-o"}, []string{"deepseek", "openai"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := llm.NewRegistry()
			r := routes.New(routes.Deps{Registry: reg})
			infos, err := r.LoadEnv(func(k string) string { return c.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, in := range infos {
				got = append(got, in.Name)
			}
			if !slices.Equal(got, c.want) || len(reg.List()) != len(c.want) {
				t.Errorf("registered %v (registry %d), want %v", got, len(reg.List()), c.want)
			}
			if c.name == "openai-compatible" {
				if text := answer(t, reg, "openai", "m"); text != "from the environment" {
					t.Errorf("the environment's route answered %q", text)
				}
			}
		})
	}
}

func TestPrefs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	if p, err := e.routes.Prefs(ctx, "u1"); err != nil || p != (routes.Prefs{}) {
		t.Fatalf("unset prefs: %+v, %v", p, err)
	}
	want := routes.Prefs{Provider: "builtin", Mode: session.ModeAuto}
	if err := e.routes.SavePrefs(ctx, "u1", want); err != nil {
		t.Fatal(err)
	}
	if p, err := e.routes.Prefs(ctx, "u1"); err != nil || p != want {
		t.Fatalf("prefs %+v, %v; want %+v", p, err, want)
	}
	cases := []struct {
		prefs         routes.Prefs
		provider, mdl string
	}{
		{routes.Prefs{Provider: "builtin"}, "builtin", "b"},
		{routes.Prefs{Provider: "builtin", Model: "x"}, "builtin", "x"},
		{routes.Prefs{Provider: "gone", Model: "x"}, "builtin", "b"},
		{routes.Prefs{}, "builtin", "b"},
	}
	for _, c := range cases {
		if p, m := e.routes.Preferred(c.prefs); p != c.provider || m != c.mdl {
			t.Errorf("Preferred(%+v) = %s/%s, want %s/%s", c.prefs, p, m, c.provider, c.mdl)
		}
	}
}

func TestStoredRouteNeverShadowsABuiltInOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A row named like a built-in route (stored before that route existed).
	if err := e.store.SaveProvider(t.Context(), models.ProviderConfig{Name: "builtin", Kind: "openai", BaseURL: "http://127.0.0.1:2", DefaultModel: "s", Models: `["s"]`, Enabled: true}, false); err != nil {
		t.Fatal(err)
	}
	e.restart(t)
	if info, _ := e.routes.Lookup("builtin"); info.DefaultModel != "b" {
		t.Errorf("the stored row replaced the built-in route: %+v", info)
	}
	if e.routes.Managed("builtin") {
		t.Error("the built-in route counts as stored")
	}
	list, err := e.routes.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Source != routes.SourceEnv {
		t.Errorf("list %+v: want the built-in route only", list)
	}
}

// TestPricesStoredListedAndTested: a route's prices and window are stored,
// listed (without the key), reach the live route's models, and survive a
// restart; the connection test answers ok, then the provider's coded
// failure with the key cut from its message.
func TestPricesStoredListedAndTested(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const key = "sk-price-secret-0123456789"
	srv := fake.NewServer(fake.Script{Replies: []fake.Reply{
		{Text: "ok"},
		{Error: &fake.HTTPError{Status: 401, Message: "Incorrect API key provided: " + key}},
	}}, fake.WithChunkDelay(0))
	base := srv.Start(t)
	if _, err := e.routes.Save(t.Context(), routes.Form{Name: "priced", Kind: "openai", BaseURL: base, APIKey: key, Models: "m1",
		InputPrice: "2.5", CachedInputPrice: "0.5", OutputPrice: "10", ContextWindow: "32000", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		list, err := e.routes.List(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(list, func(r routes.Route) bool { return r.Name == "priced" })
		if i < 0 {
			t.Fatalf("%s: not listed", when)
		}
		r := list[i]
		if r.InputPrice == nil || *r.InputPrice != 2.5 || r.CachedInputPrice == nil || *r.CachedInputPrice != 0.5 ||
			r.OutputPrice == nil || *r.OutputPrice != 10 || r.ContextWindow != 32_000 || !r.KeySet {
			t.Errorf("%s: listed %+v", when, r)
		}
		info, _ := e.routes.Lookup("priced")
		m := info.Model("m1")
		if m.Price == nil || *m.Price != (llm.Price{Input: 2.5, CachedInput: 0.5, Output: 10}) || m.ContextWindow != 32_000 {
			t.Errorf("%s: live model %+v", when, m)
		}
	}
	check("after save")
	e.restart(t)
	check("after a restart")

	if err := e.routes.Test(t.Context(), "priced"); err != nil {
		t.Fatalf("test on a working route: %v", err)
	}
	if got := srv.Requests()[0].Raw; !strings.Contains(string(got), "ping") {
		t.Errorf("the test request: %s", got)
	}
	err := e.routes.Test(t.Context(), "priced")
	f := routes.TestFailure(err)
	if f == nil || f.Code != llm.CodeAuth || strings.Contains(f.Message, key) {
		t.Fatalf("test on a refusing route: %v", err)
	}
	if err := e.routes.Test(t.Context(), "builtin"); routes.InputMessage(err) == "" {
		t.Errorf("testing a built-in route: %v, want a refusal", err)
	}

	// Clearing the prices stores nulls, not zeros.
	if _, err := e.routes.Save(t.Context(), routes.Form{Name: "priced", Kind: "openai", BaseURL: base, Models: "m1", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if pc, _ := e.store.Provider(t.Context(), "priced"); pc.InputPrice != nil || pc.OutputPrice != nil || pc.ContextWindow != 0 {
		t.Errorf("after clearing: %+v", pc)
	}
}

func TestImageInputStoredAndApplied(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base := fake.NewServer(fake.Script{}).Start(t)
	for _, on := range []bool{true, false} {
		if _, err := e.routes.Save(t.Context(), routes.Form{Name: "vision", Kind: "openai", BaseURL: base, Models: "m", Enabled: true, ImageInput: on}); err != nil {
			t.Fatal(err)
		}
		if info, ok := e.routes.Lookup("vision"); !ok || info.ImageInput != on {
			t.Fatalf("live route after saving image input %v: %+v", on, info)
		}
		list, err := e.routes.List(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(list, func(r routes.Route) bool { return r.Name == "vision" })
		if i < 0 || list[i].ImageInput != on {
			t.Fatalf("listed after saving image input %v: %+v", on, list)
		}
		e.restart(t)
		if info, _ := e.routes.Lookup("vision"); info.ImageInput != on {
			t.Fatalf("after a restart: image input %v, want %v", info.ImageInput, on)
		}
	}
}

// Load applies what another process changed: a route it added, edited or
// deleted; routes whose rows did not change are not built again.
func TestLoadFollowsTheStoreAndSkipsUnchangedRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	builds := map[string]int{}
	build := func(cfg openai.Config) (llm.Provider, error) {
		builds[cfg.Name]++
		return openai.New(cfg)
	}
	mine := routes.New(routes.Deps{Registry: e.reg, Store: e.store, Build: build})
	// Another replica: its own registry and Routes over the same store.
	other := routes.New(routes.Deps{Registry: llm.NewRegistry(), Store: e.store})
	for _, n := range []string{"alpha", "beta"} {
		if _, err := other.Save(ctx, routes.Form{Name: n, Kind: "openai", BaseURL: "http://127.0.0.1:1/v1", APIKey: "sk-" + n + "-0123456789", DefaultModel: "m", Models: "m", Enabled: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := mine.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Save(ctx, routes.Form{Name: "beta", Kind: "openai", BaseURL: "http://127.0.0.1:2/v1", DefaultModel: "m2", Models: "m2", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if err := other.Delete(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	if err := mine.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := mine.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.reg.Get("alpha"); ok || mine.Managed("alpha") {
		t.Fatal("the deleted route is still live")
	}
	if p, ok := e.reg.Get("beta"); !ok || p.Info().DefaultModel != "m2" {
		t.Fatalf("the edited route: %v %+v", ok, p)
	}
	if builds["alpha"] != 1 || builds["beta"] != 2 {
		t.Fatalf("builds %v, want alpha once and beta twice (a Load of unchanged rows builds nothing)", builds)
	}
}
