package main

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"harness/internal/auth"
	"harness/internal/config"
	"harness/internal/models"
)

func cliConfig(t *testing.T) config.Config {
	t.Helper()
	return cliConfigAt(t, t.TempDir())
}

type cliResult struct {
	handled     bool
	err         error
	out, errOut string
}

func runCLI(t *testing.T, cfg config.Config, stdin string, args ...string) cliResult {
	t.Helper()
	var out, errOut bytes.Buffer
	handled, err := RunCLI(t.Context(), cfg, args, strings.NewReader(stdin), &out, &errOut)
	return cliResult{handled, err, out.String(), errOut.String()}
}

// withService opens the CLI's database between commands.
func withService(t *testing.T, cfg config.Config, fn func(svc *auth.Service, db *models.DB)) {
	t.Helper()
	db, err := models.Open(t.Context(), nil, models.Config{Driver: cfg.DBDriver, DSN: cfg.DBDSN})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fn(auth.NewService(nil, models.NewAuthStore(db), auth.Options{BcryptCost: bcrypt.MinCost}), db)
}

func TestCLINotHandled(t *testing.T) {
	t.Parallel()
	cfg := cliConfig(t)
	for _, args := range [][]string{nil, {"serve"}, {"--addr", "x"}, {"users"}} {
		if r := runCLI(t, cfg, "", args...); r.handled || r.err != nil {
			t.Errorf("%q: handled=%v err=%v", args, r.handled, r.err)
		}
	}
}

func TestCLIUsers(t *testing.T) {
	t.Parallel()
	cfg := cliConfig(t)
	steps := []struct {
		name    string
		stdin   string
		args    []string
		wantErr error  // nil = success
		wantOut string // substring of stdout
	}{
		{"add", "alice-password\n", []string{"user", "add", "Alice"}, nil, "created user alice"},
		{"add admin, flag after name", "bob-password", []string{"user", "add", "bob", "--admin"}, nil, "created admin bob"},
		{"add admin, flag first", "carol-password\r\n", []string{"user", "add", "-admin", "carol"}, nil, "created admin carol"},
		{"duplicate", "alice-password\n", []string{"user", "add", "alice"}, auth.ErrExists, ""},
		{"no password on stdin", "", []string{"user", "add", "dave"}, nil, ""},
		{"short password", "short\n", []string{"user", "add", "dave"}, auth.ErrInvalidInput, ""},
		{"passwd", "alice-new-password\nignored\n", []string{"user", "passwd", "alice"}, nil, "password of alice changed"},
		{"passwd unknown", "whatever-password\n", []string{"user", "passwd", "nobody"}, auth.ErrNotFound, ""},
		{"disable", "", []string{"user", "disable", "alice"}, nil, "alice disabled"},
		{"list", "", []string{"user", "list"}, nil, "alice  user   disabled"},
		{"enable", "", []string{"user", "enable", "alice"}, nil, "alice enabled"},
		{"delete", "", []string{"user", "delete", "carol"}, nil, "deleted carol"},
	}
	for _, s := range steps {
		r := runCLI(t, cfg, s.stdin, s.args...)
		if !r.handled {
			t.Fatalf("%s: not handled", s.name)
		}
		switch {
		case s.name == "no password on stdin":
			if r.err == nil || !strings.Contains(r.err.Error(), "no password") {
				t.Fatalf("%s: err = %v", s.name, r.err)
			}
		case s.wantErr != nil:
			if !errors.Is(r.err, s.wantErr) {
				t.Fatalf("%s: err = %v, want %v", s.name, r.err, s.wantErr)
			}
		case r.err != nil || !strings.Contains(r.out, s.wantOut):
			t.Fatalf("%s: err=%v stdout=%q, want %q", s.name, r.err, r.out, s.wantOut)
		}
		for _, pw := range []string{"alice-password", "alice-new-password", "bob-password"} {
			if strings.Contains(r.out+r.errOut, pw) {
				t.Fatalf("%s: output shows a password", s.name)
			}
		}
	}
	withService(t, cfg, func(svc *auth.Service, _ *models.DB) {
		ctx := t.Context()
		if _, _, err := svc.Login(ctx, "alice", "alice-new-password", "127.0.0.1", "cli-test"); err != nil {
			t.Fatalf("alice logs in with the password from stdin: %v", err)
		}
		if u, err := svc.GetUser(ctx, "bob"); err != nil || u.Role != auth.RoleAdmin {
			t.Fatalf("bob = %+v, %v", u, err)
		}
		if _, err := svc.GetUser(ctx, "carol"); !errors.Is(err, auth.ErrNotFound) {
			t.Fatalf("carol after delete: %v", err)
		}
		if _, err := svc.GetUser(ctx, "dave"); !errors.Is(err, auth.ErrNotFound) {
			t.Fatalf("dave was created without a valid password: %v", err)
		}
	})
}

func TestCLITokens(t *testing.T) {
	t.Parallel()
	cfg := cliConfig(t)
	if r := runCLI(t, cfg, "alice-password\n", "user", "add", "alice"); r.err != nil {
		t.Fatal(r.err)
	}
	r := runCLI(t, cfg, "", "token", "create", "alice", "--name", "laptop")
	if r.err != nil {
		t.Fatal(r.err)
	}
	tok := strings.TrimSpace(r.out)
	if !strings.HasPrefix(tok, "hrn_") || strings.Count(r.out, "\n") != 1 || !strings.Contains(r.errOut, "shown once") {
		t.Fatalf("token create printed %q / %q", r.out, r.errOut)
	}
	var id string
	withService(t, cfg, func(svc *auth.Service, db *models.DB) {
		a, err := svc.TokenActor(t.Context(), tok)
		if err != nil || a.Name != "alice" {
			t.Fatalf("printed token does not authenticate: %+v, %v", a, err)
		}
		var rows []models.APIToken
		db.R.Find(&rows)
		if len(rows) != 1 || strings.Contains(rows[0].Hash, strings.TrimPrefix(tok, "hrn_")) {
			t.Fatalf("stored tokens %+v", rows)
		}
		id = rows[0].ID
	})

	list := runCLI(t, cfg, "", "token", "list", "alice")
	if list.err != nil || !strings.Contains(list.out, id) || !strings.Contains(list.out, "laptop") || strings.Contains(list.out, tok) {
		t.Fatalf("token list: %v %q", list.err, list.out)
	}
	if r := runCLI(t, cfg, "", "token", "revoke", "alice", "no-such-id"); !errors.Is(r.err, auth.ErrNotFound) {
		t.Fatalf("revoke unknown id: %v", r.err)
	}
	if r := runCLI(t, cfg, "", "token", "revoke", "alice", id); r.err != nil || !strings.Contains(r.out, "revoked") {
		t.Fatalf("token revoke: %v %q", r.err, r.out)
	}
	withService(t, cfg, func(svc *auth.Service, _ *models.DB) {
		if _, err := svc.TokenActor(t.Context(), tok); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatalf("revoked token still works: %v", err)
		}
	})
	if list := runCLI(t, cfg, "", "token", "list", "alice"); !strings.Contains(list.out, "revoked") {
		t.Fatalf("token list after revoke: %q", list.out)
	}
}

func TestCLIUsageAndLock(t *testing.T) {
	t.Parallel()
	cfg := cliConfig(t)
	for _, args := range [][]string{
		{"user"}, {"user", "frob"}, {"token", "revoke", "alice"}, {"user", "add"},
		{"user", "add", "a", "b"}, {"user", "add", "--bogus", "a"}, {"token", "create", "alice", "--admin"},
	} {
		r := runCLI(t, cfg, "pw-pw-pw-pw\n", args...)
		if !r.handled || !errors.Is(r.err, errUsage) || !strings.Contains(r.errOut, "token create NAME") {
			t.Errorf("%q: handled=%v err=%v stderr=%q", args, r.handled, r.err, r.errOut)
		}
	}
	// A running server holds the SQLite database: the CLI says so.
	db, err := models.Open(t.Context(), nil, models.Config{DSN: filepath.Join(cfg.DataDir, "harness.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := runCLI(t, cfg, "", "user", "list")
	if !errors.Is(r.err, models.ErrLocked) || !strings.Contains(r.err.Error(), "stop it first") {
		t.Fatalf("with the database held: %v", r.err)
	}
}
