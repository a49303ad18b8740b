package app_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"harness/internal/app"
	"harness/internal/config"
	"harness/internal/testkit/apptest"
	"harness/internal/workspace"
)

// A SQLite database placed outside the data directory (HARNESS_DB_DSN) is
// kept out of every workspace root, like the data directory: the file tools
// run in the server's process, where a descriptor of the database closed
// by a tool would drop SQLite's locks on it.
func TestWorkspacesNeverContainTheDatabase(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	dbDir := filepath.Join(top, "db")
	projects := filepath.Join(top, "projects")
	for _, d := range []string{dbDir, projects} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a := apptest.StartApp(t, func(c *config.Config) { c.DBDSN = filepath.Join(dbDir, "harness.db") }, app.Options{})
	for _, root := range []string{top, dbDir} {
		if _, err := a.Workspaces.CheckRoot(root); !errors.Is(err, workspace.ErrNotAllowed) {
			t.Errorf("CheckRoot(%s) = %v, want it refused", root, err)
		}
	}
	if _, err := a.Workspaces.CheckRoot(projects); err != nil {
		t.Errorf("CheckRoot(%s) beside the database: %v", projects, err)
	}
}
