package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"harness/internal/config"
)

// A word the server does not know is refused with the list of commands
// (main then exits 1) instead of starting a server; flags alone serve.
func TestUnknownCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := map[string]string{"HARNESS_DATA_DIR": dir, "HARNESS_ADDR": "127.0.0.1:0"}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		args    []string
		unknown string // "" = not handled: main serves
	}{
		{[]string{"imprt"}, "imprt"},
		{[]string{"serve"}, "serve"},
		{[]string{"users", "list"}, "users"},
		{[]string{"-addr", "127.0.0.1:0", "imprt"}, "imprt"},
		{[]string{"-addr=127.0.0.1:0", "tokens"}, "tokens"},
		{nil, ""},
		{[]string{"-addr", "127.0.0.1:0"}, ""},
	}
	for _, tt := range tests {
		cfg, err := config.Load(tt.args, getenv)
		if err != nil {
			t.Fatalf("%q: load: %v", tt.args, err)
		}
		var out, errOut bytes.Buffer
		handled, err := RunCLI(t.Context(), cfg, tt.args, strings.NewReader(""), &out, &errOut)
		if tt.unknown == "" {
			if handled || err != nil {
				t.Errorf("%q: handled=%v err=%v, want to serve", tt.args, handled, err)
			}
			continue
		}
		if !handled || !errors.Is(err, errUsage) || !strings.Contains(err.Error(), `unknown command "`+tt.unknown+`"`) {
			t.Errorf("%q: handled=%v err=%v, want unknown command %q", tt.args, handled, err, tt.unknown)
		}
		for _, cmd := range []string{"user add NAME", "token create NAME", "import FILE..."} {
			if !strings.Contains(errOut.String(), cmd) {
				t.Errorf("%q: the list lacks %q: %s", tt.args, cmd, errOut.String())
			}
		}
	}
}

// main exits 1 whenever run fails; run fails on an unknown command before
// it opens anything.
func TestRunRefusesUnknownCommand(t *testing.T) {
	t.Setenv("HARNESS_DATA_DIR", t.TempDir())
	t.Setenv("HARNESS_ADDR", "127.0.0.1:0")
	if err := run([]string{"imprt"}); err == nil || !strings.Contains(err.Error(), `unknown command "imprt"`) {
		t.Fatalf("run(imprt) = %v, want unknown command", err)
	}
}
