package models

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"
)

// countStatements counts every statement GORM runs on db from now on
// (creates, queries, updates, deletes, raw rows and execs), whatever the
// session's logger.
func countStatements(t *testing.T, db *DB) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	count := func(*gorm.DB) { n.Add(1) }
	cb := db.W.Callback()
	name := "test:count"
	for _, err := range []error{
		cb.Create().After("gorm:create").Register(name, count),
		cb.Query().After("gorm:query").Register(name, count),
		cb.Update().After("gorm:update").Register(name, count),
		cb.Delete().After("gorm:delete").Register(name, count),
		cb.Row().After("gorm:row").Register(name, count),
		cb.Raw().After("gorm:raw").Register(name, count),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return &n
}

func storedVersion(t *testing.T, db *DB) schemaVersion {
	t.Helper()
	v, err := readSchemaVersion(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSchemaVersionCurrentSkipsAutoMigrate(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		if v := storedVersion(t, db); v.Version != len(schemaSteps) || v.Models != modelsFingerprint() {
			t.Fatalf("after Open: version %d models %q, want %d %q", v.Version, v.Models, len(schemaSteps), modelsFingerprint())
		}
		n := countStatements(t, db)
		if err := migrate(t.Context(), db); err != nil {
			t.Fatal(err)
		}
		if got := n.Load(); got != 1 {
			t.Fatalf("a current database ran %d statements, want 1 (the version read)", got)
		}
	})
}

func TestSchemaVersionOldDatabaseMigrates(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		ctx := t.Context()
		// A database from before versions: no schema_version, and a column
		// a later model added is missing.
		if err := db.W.Migrator().DropTable(&schemaVersion{}); err != nil {
			t.Fatal(err)
		}
		if err := db.W.Migrator().DropColumn(&Session{}, "PendingPrompt"); err != nil {
			t.Fatal(err)
		}
		if v := storedVersion(t, db); v != (schemaVersion{}) {
			t.Fatalf("without the table: %+v, want the zero version", v)
		}
		n := countStatements(t, db)
		if err := migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		if got := n.Load(); got < 10 {
			t.Fatalf("an old database ran only %d statements", got)
		}
		if !db.W.Migrator().HasColumn(&Session{}, "PendingPrompt") {
			t.Fatal("the missing column was not added")
		}
		if v := storedVersion(t, db); v.Version != len(schemaSteps) || v.Models != modelsFingerprint() {
			t.Fatalf("after migrating: %+v", v)
		}

		// Changed models (another fingerprint) migrate again, once.
		if err := db.W.Exec(`UPDATE schema_version SET models = 'older' WHERE id = 1`).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.W.Migrator().DropColumn(&Session{}, "PendingPrompt"); err != nil {
			t.Fatal(err)
		}
		if err := migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		if !db.W.Migrator().HasColumn(&Session{}, "PendingPrompt") {
			t.Fatal("changed models did not migrate")
		}
		if v := storedVersion(t, db); v.Models != modelsFingerprint() {
			t.Fatalf("fingerprint not stored: %+v", v)
		}
	})
}

func TestSchemaStepsRunOnceInOrder(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		ctx := t.Context()
		var ran []string
		step := func(name string) schemaStep {
			return schemaStep{name: name, run: func(ctx context.Context, db *DB) error {
				// Steps run after migrateModels: the tables exist.
				if !db.W.Migrator().HasTable(&Session{}) {
					t.Errorf("step %s ran before the tables exist", name)
				}
				ran = append(ran, name)
				return nil
			}}
		}
		steps := append(slices.Clone(schemaSteps), step("a"), step("b"))
		if err := migrateSteps(ctx, db, steps); err != nil {
			t.Fatal(err)
		}
		if err := migrateSteps(ctx, db, steps); err != nil {
			t.Fatal(err)
		}
		if want := []string{"a", "b"}; !slices.Equal(ran, want) {
			t.Fatalf("ran %q, want %q", ran, want)
		}
		steps = append(steps, step("c"))
		if err := migrateSteps(ctx, db, steps); err != nil {
			t.Fatal(err)
		}
		if want := []string{"a", "b", "c"}; !slices.Equal(ran, want) {
			t.Fatalf("ran %q, want %q", ran, want)
		}
		if v := storedVersion(t, db); v.Version != len(steps) {
			t.Fatalf("version %d, want %d", v.Version, len(steps))
		}

		// A failing step stops there; the version stays, so the next start
		// runs it again.
		failed := schemaStep{name: "fails", run: func(context.Context, *DB) error { return context.DeadlineExceeded }}
		err := migrateSteps(ctx, db, append(slices.Clone(steps), failed, step("d")))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("step %d (fails)", len(steps)+1)) {
			t.Fatalf("failing step: %v", err)
		}
		if v := storedVersion(t, db); v.Version != len(steps) {
			t.Fatalf("after a failed step: version %d, want %d", v.Version, len(steps))
		}

		// A database from a newer build keeps its version; this build runs
		// none of its steps.
		ran = nil
		if err := migrateSteps(ctx, db, schemaSteps); err != nil {
			t.Fatal(err)
		}
		if v := storedVersion(t, db); v.Version != len(steps) || len(ran) != 0 {
			t.Fatalf("older build on a newer database: version %d, ran %q", v.Version, ran)
		}
	})
}

// TestModelsFingerprint: the fingerprint is stable and sees a tag change.
func TestModelsFingerprint(t *testing.T) {
	t.Parallel()
	if a, b := modelsFingerprint(), modelsFingerprint(); a != b || len(a) != 64 {
		t.Fatalf("fingerprint %q then %q", a, b)
	}
	type v1 struct {
		Name string `gorm:"size:64"`
	}
	type v2 struct {
		Name string `gorm:"size:128"`
	}
	var b1, b2 strings.Builder
	writeStructFingerprint(&b1, reflect.TypeFor[v1]())
	writeStructFingerprint(&b2, reflect.TypeFor[v2]())
	if strings.ReplaceAll(b1.String(), "v1", "v2") == b2.String() {
		t.Fatal("a tag change does not change the fingerprint")
	}
}

// BenchmarkMigrate is what a start spends on the schema of an up-to-date
// SQLite database: Current is migrate (one read of schema_version), Models
// is migrateModels (AutoMigrate and the extra indexes), which every start
// ran before schema versions.
//
//	go test -run '^$' -bench Migrate ./internal/models
func BenchmarkMigrate(b *testing.B) {
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		run  func(context.Context, *DB) error
	}{{"Current", migrate}, {"Models", migrateModels}} {
		b.Run(bc.name, func(b *testing.B) {
			db := openBenchDB(b)
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.run(ctx, db); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
