package models

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"harness/internal/secrets"
)

func testSealer(t *testing.T) *secrets.Sealer {
	t.Helper()
	s, err := secrets.NewSealer(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rawKey reads the api_key column as stored, past the store.
func rawKey(t *testing.T, db *DB, name string) string {
	t.Helper()
	var v string
	if err := db.R.Raw("SELECT api_key FROM provider_configs WHERE name = ?", name).Scan(&v).Error; err != nil {
		t.Fatalf("raw api_key of %s: %v", name, err)
	}
	return v
}

// insertPlainProvider writes a row the way a version without sealing did.
func insertPlainProvider(t *testing.T, db *DB, name, key string, at time.Time) {
	t.Helper()
	err := db.W.Exec(`INSERT INTO provider_configs (name, kind, base_url, api_key, default_model, models, enabled, updated_at)
		VALUES (?, 'openai', 'http://127.0.0.1:1/v1', ?, 'm', '["m"]', ?, ?)`, name, key, true, at).Error
	if err != nil {
		t.Fatalf("insert plain-text provider %s: %v", name, err)
	}
}

func route(name, key string) ProviderConfig {
	return ProviderConfig{Name: name, Kind: "openai", BaseURL: "http://127.0.0.1:1/v1", APIKey: key, DefaultModel: "m", Models: `["m"]`, Enabled: true}
}

func TestSaveProviderSealsKey(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		ctx := t.Context()
		s := NewSettingsStore(db, testSealer(t))
		const key = "sk-live-0123456789-abcdef"
		long := strings.Repeat("k", 512) // the longest key the form takes
		for name, k := range map[string]string{"work": key, "long": long, "keyless": ""} {
			if err := s.SaveProvider(ctx, route(name, k), false); err != nil {
				t.Fatal(err)
			}
		}
		raw := rawKey(t, db, "work")
		if strings.Contains(raw, key) || strings.Contains(raw, "0123456789") || !secrets.IsSealed(raw) {
			t.Fatalf("stored column %q: want a sealed value without the key", raw)
		}
		if got := rawKey(t, db, "keyless"); got != "" {
			t.Fatalf("a route without a key stored %q", got)
		}

		pcs, err := s.Providers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]ProviderConfig{}
		for _, pc := range pcs {
			if pc.KeyError != nil {
				t.Fatalf("%s: KeyError %v", pc.Name, pc.KeyError)
			}
			got[pc.Name] = pc
		}
		if got["work"].APIKey != key || got["long"].APIKey != long || got["keyless"].APIKey != "" || len(got) != 3 {
			t.Fatalf("Providers keys: %q %d %q (%d rows)", got["work"].APIKey, len(got["long"].APIKey), got["keyless"].APIKey, len(got))
		}

		// An edit without a key keeps it; a new key replaces it; clearKey clears it.
		if err := s.SaveProvider(ctx, route("work", ""), false); err != nil {
			t.Fatal(err)
		}
		if pc, err := s.Provider(ctx, "work"); err != nil || pc.APIKey != key || pc.KeyError != nil {
			t.Fatalf("after an edit without a key: %q, %v, %v", pc.APIKey, err, pc.KeyError)
		}
		if err := s.SaveProvider(ctx, route("work", "sk-new"), false); err != nil {
			t.Fatal(err)
		}
		if pc, _ := s.Provider(ctx, "work"); pc.APIKey != "sk-new" || rawKey(t, db, "work") == raw {
			t.Fatalf("after a new key: %q", pc.APIKey)
		}
		if err := s.SaveProvider(ctx, route("work", ""), true); err != nil {
			t.Fatal(err)
		}
		if pc, _ := s.Provider(ctx, "work"); pc.APIKey != "" || rawKey(t, db, "work") != "" {
			t.Fatalf("after clearing: %q", pc.APIKey)
		}
	})
}

func TestMigrateSecrets(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		ctx := t.Context()
		s := NewSettingsStore(db, testSealer(t))
		at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
		insertPlainProvider(t, db, "old-a", "sk-plain-a", at)
		insertPlainProvider(t, db, "old-b", "sk-plain-b", at)
		insertPlainProvider(t, db, "no-key", "", at)
		if err := s.SaveProvider(ctx, route("sealed", "sk-already-sealed"), false); err != nil {
			t.Fatal(err)
		}
		sealedBefore := rawKey(t, db, "sealed")

		// Before the migration a plain-text row still works.
		if pc, err := s.Provider(ctx, "old-a"); err != nil || pc.APIKey != "sk-plain-a" {
			t.Fatalf("plain-text row before migration: %q, %v", pc.APIKey, err)
		}

		n, err := s.MigrateSecrets(ctx)
		if err != nil || n != 2 {
			t.Fatalf("MigrateSecrets = %d, %v; want 2", n, err)
		}
		for name, key := range map[string]string{"old-a": "sk-plain-a", "old-b": "sk-plain-b"} {
			raw := rawKey(t, db, name)
			if !secrets.IsSealed(raw) || strings.Contains(raw, key) {
				t.Fatalf("%s after migration: %q", name, raw)
			}
			pc, err := s.Provider(ctx, name)
			if err != nil || pc.APIKey != key || pc.KeyError != nil {
				t.Fatalf("%s reads back %q, %v, %v", name, pc.APIKey, err, pc.KeyError)
			}
			if !pc.UpdatedAt.Equal(at) {
				t.Fatalf("%s: migration changed updated_at to %v", name, pc.UpdatedAt)
			}
		}
		if rawKey(t, db, "sealed") != sealedBefore {
			t.Fatal("an already sealed value was sealed again")
		}
		if rawKey(t, db, "no-key") != "" {
			t.Fatal("an empty key was sealed")
		}

		if n, err := s.MigrateSecrets(ctx); err != nil || n != 0 {
			t.Fatalf("second MigrateSecrets = %d, %v; want 0", n, err)
		}
	})
}

func TestProvidersReportKeysThatDoNotOpen(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		ctx := t.Context()
		old := NewSettingsStore(db, testSealer(t))
		if err := old.SaveProvider(ctx, route("lost", "sk-under-the-old-key"), false); err != nil {
			t.Fatal(err)
		}
		s := NewSettingsStore(db, testSealer(t)) // the secret key changed
		for _, pc := range []ProviderConfig{route("good", "sk-good"), route("victim", "sk-victim"), route("keyless", "")} {
			if err := s.SaveProvider(ctx, pc, false); err != nil {
				t.Fatal(err)
			}
		}
		// Someone with write access to the database copies one route's
		// sealed key into another row: it must not open there.
		if err := db.W.Exec("UPDATE provider_configs SET api_key = ? WHERE name = ?", rawKey(t, db, "good"), "victim").Error; err != nil {
			t.Fatal(err)
		}

		pcs, err := s.Providers(ctx)
		if err != nil {
			t.Fatalf("Providers failed for the whole table: %v", err)
		}
		byName := map[string]ProviderConfig{}
		for _, pc := range pcs {
			byName[pc.Name] = pc
		}
		if len(byName) != 4 {
			t.Fatalf("Providers returned %d rows, want all 4", len(byName))
		}
		for _, name := range []string{"lost", "victim"} {
			pc := byName[name]
			if !errors.Is(pc.KeyError, secrets.ErrCannotOpen) || pc.APIKey != "" {
				t.Fatalf("%s: APIKey %q, KeyError %v; want empty and ErrCannotOpen", name, pc.APIKey, pc.KeyError)
			}
			if !strings.Contains(pc.KeyError.Error(), name) {
				t.Fatalf("%s: KeyError %q does not name the route", name, pc.KeyError)
			}
			if pc.BaseURL == "" || !pc.Enabled {
				t.Fatalf("%s: the rest of the row was lost: %+v", name, pc)
			}
		}
		if pc := byName["good"]; pc.KeyError != nil || pc.APIKey != "sk-good" {
			t.Fatalf("good: %q, %v", pc.APIKey, pc.KeyError)
		}
		if pc := byName["keyless"]; pc.KeyError != nil || pc.APIKey != "" {
			t.Fatalf("keyless: %q, %v", pc.APIKey, pc.KeyError)
		}
		pc, err := s.Provider(ctx, "lost")
		if err != nil || !errors.Is(pc.KeyError, secrets.ErrCannotOpen) || pc.APIKey != "" {
			t.Fatalf("Provider(lost) = %q, %v, KeyError %v", pc.APIKey, err, pc.KeyError)
		}
		// The migration leaves sealed values alone, whoever sealed them.
		if n, err := s.MigrateSecrets(ctx); err != nil || n != 0 {
			t.Fatalf("MigrateSecrets = %d, %v; want 0", n, err)
		}
		// Entering the key again repairs the route.
		if err := s.SaveProvider(ctx, route("lost", "sk-re-entered"), false); err != nil {
			t.Fatal(err)
		}
		if pc, _ := s.Provider(ctx, "lost"); pc.KeyError != nil || pc.APIKey != "sk-re-entered" {
			t.Fatalf("after re-entering: %q, %v", pc.APIKey, pc.KeyError)
		}
	})
}

// A PostgreSQL schema from before sealing has api_key varchar(512); the
// migration widens it so a sealed 512-byte key fits.
func TestProviderKeyColumnWidened(t *testing.T) {
	t.Parallel()
	dsn := os.Getenv(pgDSNEnv)
	if dsn == "" {
		t.Skip(pgDSNEnv + " unset")
	}
	db := openPostgresTest(t, dsn)
	ctx := t.Context()
	if err := db.W.Exec("ALTER TABLE provider_configs ALTER COLUMN api_key TYPE varchar(512)").Error; err != nil {
		t.Fatal(err)
	}
	// A database that old has no schema version either.
	if err := db.W.Exec("DROP TABLE schema_version").Error; err != nil {
		t.Fatal(err)
	}
	insertPlainProvider(t, db, "old", strings.Repeat("k", 512), time.Now())
	if err := migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	s := NewSettingsStore(db, testSealer(t))
	if n, err := s.MigrateSecrets(ctx); err != nil || n != 1 {
		t.Fatalf("MigrateSecrets = %d, %v", n, err)
	}
	if pc, err := s.Provider(ctx, "old"); err != nil || pc.APIKey != strings.Repeat("k", 512) {
		t.Fatalf("512-byte key after migration: %d bytes, %v", len(pc.APIKey), err)
	}
}

func TestSQLiteFilesArePrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no group/other permission bits on Windows")
	}
	t.Parallel()
	wantPrivate := func(t *testing.T, path string, required bool) {
		t.Helper()
		st, err := os.Stat(path)
		if os.IsNotExist(err) && !required {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %#o, want 0600", filepath.Base(path), st.Mode().Perm())
		}
	}
	open := func(t *testing.T, path string) *DB {
		t.Helper()
		db, err := Open(t.Context(), testLogger(t), Config{DSN: path})
		if err != nil {
			t.Fatal(err)
		}
		// A write, so the WAL has content.
		if err := NewSettingsStore(db, testSealer(t)).SaveProvider(t.Context(), route("r", "sk-x"), false); err != nil {
			t.Fatal(err)
		}
		return db
	}

	t.Run("new database", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "harness.db")
		db := open(t, path)
		defer db.Close()
		wantPrivate(t, path, true)
		wantPrivate(t, path+"-wal", true) // WAL mode: present while open
		wantPrivate(t, path+"-shm", false)
		wantPrivate(t, path+".lock", true)
	})
	t.Run("existing loose database", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "harness.db")
		if err := open(t, path).Close(); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{path, path + "-wal", path + "-shm", path + ".lock"} {
			if err := os.Chmod(p, 0o644); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
		db := open(t, path)
		defer db.Close()
		wantPrivate(t, path, true)
		wantPrivate(t, path+"-wal", true)
		wantPrivate(t, path+"-shm", false)
		wantPrivate(t, path+".lock", true)
	})
}
