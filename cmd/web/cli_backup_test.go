package main

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `backup FILE` on the SQLite database: a new 0600 file; never over an
// existing one; a clear refusal on PostgreSQL. The copy of a database a
// running server writes is tested in TestLiveDatabaseReadersLoseNothing.
func TestBackupCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := cliConfigAt(t, dir)
	userToken(t, dir, "backup", true) // a database with something in it
	existing := filepath.Join(dir, "existing.db")
	if err := os.WriteFile(existing, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	pg := cfg
	pg.DBDriver, pg.DBDSN = "postgres", "postgres://harness:s3cret@127.0.0.1:1/harness"
	tests := []struct {
		name    string
		args    []string
		pg      bool
		wantErr error  // errors.Is; nil with wantMsg "" = success
		wantMsg string // substring of the error
	}{
		{"copies", []string{"backup", filepath.Join(dir, "copy.db")}, false, nil, ""},
		{"never overwrites", []string{"backup", existing}, false, fs.ErrExist, "not overwriting"},
		{"no file", []string{"backup"}, false, errUsage, ""},
		{"two files", []string{"backup", "a.db", "b.db"}, false, errUsage, ""},
		{"postgres", []string{"backup", filepath.Join(dir, "pg.db")}, true, nil, "use pg_dump"},
	}
	for _, tt := range tests {
		c := cfg
		if tt.pg {
			c = pg
		}
		r := runCLI(t, c, "", tt.args...)
		if !r.handled {
			t.Fatalf("%s: not handled", tt.name)
		}
		if tt.wantErr == nil && tt.wantMsg == "" {
			if r.err != nil {
				t.Fatalf("%s: %v", tt.name, r.err)
			}
			continue
		}
		if r.err == nil || tt.wantErr != nil && !errors.Is(r.err, tt.wantErr) || !strings.Contains(r.err.Error(), tt.wantMsg) {
			t.Fatalf("%s: err = %v, want %v %q", tt.name, r.err, tt.wantErr, tt.wantMsg)
		}
		if strings.Contains(r.err.Error()+r.out+r.errOut, "s3cret") {
			t.Fatalf("%s: the DSN's password was printed", tt.name)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "copy.db")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("copy: %v %v, want mode 0600", err, st)
	}
	if b, err := os.ReadFile(existing); err != nil || string(b) != "keep me" {
		t.Fatalf("the existing file changed: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pg.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a PostgreSQL backup wrote a file: %v", err)
	}

	// The binary exits non-zero on a refusal.
	out, err := runBackupProc(dir, filepath.Join(dir, "pg2.db"), "HARNESS_DB_DRIVER=postgres", "HARNESS_DB_DSN="+pg.DBDSN)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 || !strings.Contains(string(out), "pg_dump") || strings.Contains(string(out), "s3cret") {
		t.Fatalf("harness backup on PostgreSQL: %v, output %q; want a non-zero exit naming pg_dump", err, out)
	}
}

// runBackupProc runs `harness backup dst` for the server on dir, as its own
// process (the test binary as the server binary).
func runBackupProc(dir, dst string, env ...string) ([]byte, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^$", "--", "backup", dst)
	cmd.Env = append(os.Environ(), "HARNESS_TEST_SERVE=1", "HARNESS_DATA_DIR="+dir)
	cmd.Env = append(cmd.Env, env...)
	return cmd.CombinedOutput()
}
