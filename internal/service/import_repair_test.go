package service_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"harness/internal/models"
)

// What a crash leaves of an import is removed at the next start, once:
// an import that had made its workspace only, one that had stored its
// session but not completed, and nothing of a completed import or of one
// another live process is still running (its journal file locked).
func TestRepairImports(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	root := e.app.Workspaces.FreshRoot()
	journal := filepath.Join(filepath.Dir(root), "imports")
	log := readCorpusFile(t, "examples--acp-agent--parallel-tool-calls--session.jsonl")
	imported := func() string {
		s, err := e.svc.Import(ctx, e.alice, bytes.NewReader(log))
		if err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	// mark writes the journal file a running import holds; held keeps it
	// locked as a live importer does.
	mark := func(id string, held bool) {
		f, err := os.OpenFile(filepath.Join(journal, id), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if !held {
			f.Close()
			return
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
	}

	complete := imported()
	stored := imported() // killed after its commit, before it completed
	mark(stored, false)
	running := imported() // another process is still importing it
	mark(running, true)
	begun := "5a0e7c1e-0000-4000-8000-000000000001" // killed with only its workspace made
	if err := os.Mkdir(filepath.Join(root, begun), 0o755); err != nil {
		t.Fatal(err)
	}
	mark(begun, false)
	if des, _ := os.ReadDir(journal); len(des) != 3 {
		t.Fatalf("journal holds %d files before the restart, want 3", len(des))
	}

	e.app.Restart()
	svc := e.app.Service
	for range 2 { // idempotent
		if err := svc.RepairImports(ctx); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		id   string
		kept bool
	}{
		{"completed", complete, true},
		{"stored, not completed", stored, false},
		{"running in another process", running, true},
		{"workspace made, nothing stored", begun, false},
	}
	for _, tt := range tests {
		_, err := e.app.Store.GetSession(ctx, tt.id)
		_, statErr := os.Stat(filepath.Join(root, tt.id))
		evs, evErr := e.app.Store.EventsSince(ctx, tt.id, -1, 0)
		if evErr != nil {
			t.Fatal(evErr)
		}
		switch {
		case tt.kept && (err != nil || statErr != nil || len(evs) == 0):
			t.Errorf("%s: want it kept: row %v, workspace %v, %d events", tt.name, err, statErr, len(evs))
		case !tt.kept && (!errors.Is(err, models.ErrNotFound) || !errors.Is(statErr, os.ErrNotExist) || len(evs) != 0):
			t.Errorf("%s: want it gone: row %v, workspace %v, %d events", tt.name, err, statErr, len(evs))
		}
	}
	des, err := os.ReadDir(journal)
	if err != nil || len(des) != 1 || des[0].Name() != running {
		t.Fatalf("journal after the repair: %v %v, want only the running import's file", des, err)
	}
	// The kept import continues.
	if _, err := svc.GetSession(ctx, e.alice, complete); err != nil {
		t.Fatal(err)
	}
}
