package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
)

// Schema versions. GORM's AutoMigrate inspects every table, column and
// index on each call (dozens of statements, about 5 ms of CPU on SQLite),
// so a start on an up-to-date database must not run it. The database
// keeps one row in schema_version:
//
//   - version: how many of schemaSteps (migrate.go) it has run;
//   - models: the fingerprint of what migrateModels creates (every model's
//     fields and tags, and extraMigrations).
//
// migrate reads that row with one query. When both match this build, it
// does nothing. Otherwise it runs migrateModels (idempotent: it is what
// every start ran before versions existed), then the steps the database
// has not run yet, in order, then stores the new row. So:
//
//   - a change to a model's fields or tags, or to extraMigrations, needs
//     nothing more: the fingerprint changes and migrateModels runs once;
//   - anything else, such as data to convert, a table to drop or raw DDL
//     in migrateModels, is a new step appended to schemaSteps (a step with
//     a nil run only makes migrateModels run once more).
//
// Steps run after migrateModels, on old and on fresh databases alike, and
// a crash before the row is stored runs them again: write them so a second
// run does nothing. Never edit, reorder or remove a released step. A
// database from a newer build (more steps than this one knows) is left at
// its version; migrateModels still runs when the fingerprints differ, as
// it did at every start before.

// schemaStep is one ordered migration: see the comment above.
type schemaStep struct {
	name string
	run  func(ctx context.Context, db *DB) error
}

// schemaVersion is the single row of schema_version.
type schemaVersion struct {
	ID        int    `gorm:"primaryKey;autoIncrement:false"`
	Version   int    `gorm:"not null"`
	Models    string `gorm:"size:64;not null"`
	UpdatedAt time.Time
}

func (schemaVersion) TableName() string { return "schema_version" }

// migrate brings the schema up to date (see above); it is idempotent.
func migrate(ctx context.Context, db *DB) error {
	return migrateSteps(ctx, db, schemaSteps)
}

// migrateSteps is migrate with the given steps (tests pass their own).
func migrateSteps(ctx context.Context, db *DB, steps []schemaStep) error {
	fp := modelsFingerprint()
	cur, err := readSchemaVersion(ctx, db)
	if err != nil {
		return fmt.Errorf("migrate: read schema version: %w", err)
	}
	if cur.Models == fp && cur.Version >= len(steps) {
		return nil
	}
	if err := migrateModels(ctx, db); err != nil {
		return err
	}
	for i := cur.Version; i < len(steps); i++ {
		if steps[i].run == nil {
			continue
		}
		if err := steps[i].run(ctx, db); err != nil {
			return fmt.Errorf("migrate: step %d (%s): %w", i+1, steps[i].name, err)
		}
	}
	g := db.W.WithContext(ctx)
	if err := g.AutoMigrate(&schemaVersion{}); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	row := schemaVersion{ID: 1, Version: max(cur.Version, len(steps)), Models: fp}
	if err := g.Clauses(clause.OnConflict{UpdateAll: true}).Create(&row).Error; err != nil {
		return fmt.Errorf("migrate: store schema version: %w", err)
	}
	return nil
}

// readSchemaVersion is the stored row, or the zero row when the database
// predates versions (or is new).
func readSchemaVersion(ctx context.Context, db *DB) (schemaVersion, error) {
	var rows []schemaVersion
	// Quiet: on a database without the table this query fails, which is
	// no warning's business.
	quiet := db.W.Session(&gorm.Session{Logger: logger.Discard, Context: ctx})
	err := quiet.Raw(`SELECT id, version, models FROM schema_version WHERE id = 1`).Scan(&rows).Error
	if err != nil {
		if !db.W.WithContext(ctx).Migrator().HasTable(&schemaVersion{}) {
			return schemaVersion{}, nil
		}
		return schemaVersion{}, err
	}
	if len(rows) == 0 {
		return schemaVersion{}, nil
	}
	return rows[0], nil
}

// modelsFingerprint is a hash of every model's fields, types and tags and
// of extraMigrations: what migrateModels makes of the database.
func modelsFingerprint() string {
	var b strings.Builder
	for _, m := range AllModels() {
		t := reflect.TypeOf(m)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		writeStructFingerprint(&b, t)
	}
	for _, s := range extraMigrations {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

func writeStructFingerprint(b *strings.Builder, t reflect.Type) {
	fmt.Fprintf(b, "%s.%s{\n", t.PkgPath(), t.Name())
	for i := range t.NumField() {
		f := t.Field(i)
		fmt.Fprintf(b, "%s %s %q\n", f.Name, f.Type, f.Tag)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			writeStructFingerprint(b, f.Type)
		}
	}
	b.WriteString("}\n")
}
