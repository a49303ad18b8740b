package models

import (
	"os"
	"sync"
	"testing"
)

// Replicas started together on a new database (a compose up, a rolling
// upgrade that changes the schema) migrate it at the same time. Every one
// opens it: the migrations run one process at a time, and the others then
// find the schema current.
func TestPostgresConcurrentMigrations(t *testing.T) {
	dsn := os.Getenv(pgDSNEnv)
	if dsn == "" {
		t.Skip("!!! SKIPPING: needs PostgreSQL; set " + pgDSNEnv + " (.ci/run does) !!!")
	}
	t.Parallel()
	for range 3 {
		schemaDSN, _ := postgresSchema(t, dsn)
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() {
				db, err := Open(t.Context(), testLogger(t), Config{Driver: DriverPostgres, DSN: schemaDSN})
				if err == nil {
					err = db.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("opener %d of %d at once: %v", i+1, len(errs), err)
			}
		}
	}
}
