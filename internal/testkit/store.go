package testkit

import (
	"context"
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
	log := Logger()
	db, err := models.Open(t.Context(), log, models.Config{Driver: models.DriverSQLite, DSN: filepath.Join(t.TempDir(), "h.db")})
	if err != nil {
		t.Fatalf("open the store: %v", err)
	}
	w := models.NewWriter(log, db, models.WriterOptions{})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.Close(ctx); err != nil {
			t.Errorf("close the writer: %v", err)
		}
		if err := db.Close(); err != nil {
			t.Errorf("close the database: %v", err)
		}
	})
	return models.NewStore(log, db, w)
}
