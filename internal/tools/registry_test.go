package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"harness/internal/llm"
	"harness/internal/session"
)

func TestRegisterValidates(t *testing.T) {
	t.Parallel()
	good := testTool("ok", false, okBody("x"))
	tests := []struct {
		name   string
		mutate func(d *Definition)
		want   string
	}{
		{"bad name", func(d *Definition) { d.Name = "has space" }, "must match"},
		{"empty name", func(d *Definition) { d.Name = "" }, "must match"},
		{"nil body", func(d *Definition) { d.Execute = nil }, "Execute is nil"},
		{"no access", func(d *Definition) { d.Access = "" }, "unknown access"},
		{"negative timeout", func(d *Definition) { d.Timeout = -1 }, "negative timeout"},
		{"empty schema", func(d *Definition) { d.Parameters = nil }, "empty"},
		{"not json", func(d *Definition) { d.Parameters = json.RawMessage(`{`) }, "not valid JSON"},
		{"not object", func(d *Definition) { d.Parameters = json.RawMessage(`[]`) }, "JSON object"},
		{"not type object", func(d *Definition) { d.Parameters = json.RawMessage(`{"type":"string"}`) }, `"type": "object"`},
		{"bad keyword value", func(d *Definition) { d.Parameters = json.RawMessage(`{"type":"object","required":"x"}`) }, "compile"},
		{"external ref", func(d *Definition) {
			d.Parameters = json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`)
		}, "compile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := good
			tt.mutate(&d)
			err := NewRegistry().Register(d)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want mention of %q", err, tt.want)
			}
		})
	}
	r := NewRegistry()
	if err := r.Register(good); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(good); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate err = %v", err)
	}
}

func TestScopeShadowRestrictSchemas(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	for _, n := range []string{"zeta", "alpha", "beta", "gamma"} {
		r.MustRegister(testTool(n, false, okBody("global "+n)))
	}
	s := r.NewScope()
	names := func() string {
		var out []string
		for _, sc := range s.Schemas() {
			out = append(out, sc.Name)
		}
		return strings.Join(out, ",")
	}
	if got := names(); got != "alpha,beta,gamma,zeta" {
		t.Fatalf("schemas %s", got)
	}
	// A scoped tool shadows the global of the same name.
	scoped := testTool("beta", true, okBody("scoped beta"))
	scoped.Description = "scoped"
	if err := s.Register(scoped); err != nil {
		t.Fatal(err)
	}
	if d, _ := s.Lookup("beta"); d.Description != "scoped" {
		t.Fatalf("lookup beta = %q", d.Description)
	}
	if s.ExecutionMode("beta", nil) != ModeParallel {
		t.Fatal("scoped classifier not used")
	}
	// Restrictions intersect and only filter inherited globals.
	s.Restrict([]string{"alpha", "beta", "gamma"}, nil)
	s.Restrict(nil, []string{"gamma"})
	s.Restrict([]string{"beta", "gamma", "zeta"}, nil)
	if got := names(); got != "beta" {
		t.Fatalf("after restrictions: %s", got)
	}
	if _, ok := s.Lookup("alpha"); ok {
		t.Fatal("alpha visible")
	}
	if s.ExecutionMode("alpha", nil) != ModeExclusive {
		t.Fatal("hidden tool must classify exclusive")
	}
	// Unregistering the scoped tool exposes the (filtered) global again.
	if !s.Unregister("beta") {
		t.Fatal("unregister")
	}
	if d, ok := s.Lookup("beta"); !ok || d.Description != "test tool beta" {
		t.Fatalf("after unregister: %+v", d)
	}
	// Another scope is unaffected, and Schemas hands out copies.
	other := r.NewScope()
	sch := other.Schemas()
	sch[0].Parameters[0] = 'X'
	if string(other.Schemas()[0].Parameters) != objectSchema {
		t.Fatal("Schemas leaked the registry's bytes")
	}
	if other.State() == s.State() {
		t.Fatal("scopes share agent state")
	}
}

// Hidden tools are unknown to the pipeline.
func TestRestrictedToolIsUnknown(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, testTool("secret", false, okBody("x")))
	p.Scope.Restrict(nil, []string{"secret"})
	env := newFakeEnv(t.TempDir())
	if _, err := p.Run(context.Background(), []llm.ContentBlock{tc("c1", "secret", "")}, 1, 1, env, newFakeSink(env.rec)); err != nil {
		t.Fatal(err)
	}
	if errCode(env.rec.commits()["c1"]) != CodeUnknownTool {
		t.Fatal("restricted tool ran")
	}
}

func TestExecutionModeFailsClosed(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	r.MustRegister(testTool("none", false, okBody("x")))
	f := testTool("false", false, okBody("x"))
	f.ConcurrencySafe = func(json.RawMessage) bool { return false }
	r.MustRegister(f)
	byArgs := testTool("byargs", false, okBody("x"))
	byArgs.ConcurrencySafe = func(a json.RawMessage) bool { return string(a) == `{"safe":true}` }
	r.MustRegister(byArgs)
	s := r.NewScope()
	tests := []struct {
		name, args string
		want       Mode
	}{
		{"missing", "{}", ModeExclusive},
		{"none", "{}", ModeExclusive},
		{"false", "{}", ModeExclusive},
		{"byargs", `{"safe":true}`, ModeParallel},
		{"byargs", `{}`, ModeExclusive},
	}
	for _, tt := range tests {
		if got := s.ExecutionMode(tt.name, json.RawMessage(tt.args)); got != tt.want {
			t.Errorf("%s %s: %s, want %s", tt.name, tt.args, got, tt.want)
		}
	}
}

func TestPermissionModes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode     session.PermissionMode
		access   Access
		ran      bool
		approval bool
		mention  string
		offline  bool // the session's network is off
	}{
		{session.ModeReadOnly, AccessRead, true, false, "", false},
		{session.ModeReadOnly, AccessInteract, true, false, "", false},
		{session.ModeReadOnly, AccessWrite, false, false, "read-only mode", false},
		{session.ModeReadOnly, AccessExec, false, false, "read-only mode", false},
		{session.ModeReadOnly, AccessNetwork, false, false, "read-only mode", false},
		{session.ModeAsk, AccessRead, true, false, "", false},
		{session.ModeAsk, AccessInteract, true, false, "", false},
		{session.ModeAsk, AccessWrite, true, true, "", false},
		{session.ModeAsk, AccessExec, true, true, "", false},
		{session.ModeAsk, AccessNetwork, true, true, "", false},
		{"", AccessExec, true, true, "", false}, // no mode recorded: ask
		{session.ModeAuto, AccessWrite, true, false, "", false},
		{session.ModeAuto, AccessExec, true, false, "", false},
		{session.ModeAuto, AccessNetwork, true, false, "", false},
		// Network off: denied without asking anyone, in every mode.
		{session.ModeAsk, AccessNetwork, false, false, "network is off", true},
		{session.ModeAuto, AccessNetwork, false, false, "network is off", true},
		{session.ModeAsk, AccessExec, true, true, "", true},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode)+"/"+string(tt.access), func(t *testing.T) {
			t.Parallel()
			d := testTool("t", false, okBody("ran"))
			d.Access = tt.access
			p := newPipeline(t, d)
			p.Pre = []PreHook{PermissionHook()}
			env := newFakeEnv(t.TempDir())
			env.mode = tt.mode
			env.network = !tt.offline
			env.approve = func(context.Context, *Call, string) session.ApprovalOutcome { return session.ApprovalAllowedOnce }
			if _, err := p.Run(context.Background(), []llm.ContentBlock{tc("c1", "t", "")}, 1, 1, env, newFakeSink(env.rec)); err != nil {
				t.Fatal(err)
			}
			r := env.rec.commits()["c1"]
			asked := len(env.rec.trace("approve")) > 0
			if (resultText(r) == "ran") != tt.ran || asked != tt.approval || !strings.Contains(resultText(r), tt.mention) {
				t.Fatalf("result %q asked=%v", resultText(r), asked)
			}
		})
	}
}

// A deny from a later hook beats the permission policy's ask.
func TestPermissionHookKeepsLaterDeny(t *testing.T) {
	t.Parallel()
	d := testTool("t", false, okBody("ran"))
	d.Access = AccessExec
	p := newPipeline(t, d)
	p.Pre = []PreHook{PermissionHook(), func(ctx context.Context, call *Call, next func(context.Context) PreDecision) PreDecision {
		return PreDecision{Kind: PreDeny, Reason: "policy says no"}
	}}
	env := newFakeEnv(t.TempDir())
	env.mode = session.ModeAsk
	if _, err := p.Run(context.Background(), []llm.ContentBlock{tc("c1", "t", "")}, 1, 1, env, newFakeSink(env.rec)); err != nil {
		t.Fatal(err)
	}
	if r := env.rec.commits()["c1"]; resultText(r) != "Error: policy says no" || len(env.rec.trace("approve")) != 0 {
		t.Fatalf("got %+v", r)
	}
}

// A lazily registered tool (RegisterLazy, as the built-in tools are)
// with a broken schema registers, and its calls fail with a clear
// INVALID_ARGS result, not a panic. The built-in schemas are compiled by
// the builtin package's TestSchemasCompile.
func TestRegisterLazyBrokenSchema(t *testing.T) {
	t.Parallel()
	d := testTool("broken", false, okBody("x"))
	d.Parameters = json.RawMessage(`{"type":"object","required":"x"}`)
	r := NewRegistry()
	if err := r.RegisterLazy(d); err != nil {
		t.Fatalf("RegisterLazy compiled the schema: %v", err)
	}
	if err := NewRegistry().Register(d); err == nil || !strings.Contains(err.Error(), "compile") {
		t.Fatalf("Register: %v", err)
	}
	p := &Pipeline{Scope: r.NewScope()}
	env := newFakeEnv(t.TempDir())
	if _, err := p.Run(t.Context(), []llm.ContentBlock{tc("c1", "broken", "{}")}, 1, 1, env, newFakeSink(env.rec)); err != nil {
		t.Fatal(err)
	}
	if r := env.rec.commits()["c1"]; errCode(r) != CodeInvalidArgs || !strings.Contains(resultText(r), "does not compile") {
		t.Fatalf("result %+v", r)
	}
}
