package testkit

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"harness/internal/models"
)

// OpenStore opens a SQLite store in a temp dir with the batched writer. The
// writer is drained and the database closed in t.Cleanup, so parts that
// write to it (a manager) must be stopped in a cleanup registered later.
func OpenStore(t testing.TB) *models.Store {
	t.Helper()
	return openStore(t, Logger(), t.TempDir(), nil)
}

// openStore starts the batched writer on db, or on a SQLite database it
// opens in dir when db is nil. The writer is drained in t.Cleanup, and the
// database closed when openStore opened it (a given one is its owner's).
func openStore(t testing.TB, log *slog.Logger, dir string, db *models.DB) *models.Store {
	t.Helper()
	owned := db == nil
	if owned {
		var err error
		db, err = models.Open(t.Context(), log, models.Config{Driver: models.DriverSQLite, DSN: filepath.Join(dir, "harness.db")})
		if err != nil {
			t.Fatalf("open the store: %v", err)
		}
	}
	w := models.NewWriter(log, db, models.WriterOptions{})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.Close(ctx); err != nil {
			t.Errorf("close the writer: %v", err)
		}
		if owned {
			if err := db.Close(); err != nil {
				t.Errorf("close the database: %v", err)
			}
		}
	})
	return models.NewStore(log, db, w)
}
