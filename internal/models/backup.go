package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
)

// BackupSQLite writes a consistent copy of the SQLite database at dbPath to
// dst while a server may be using it. The copy is made by SQLite itself
// (VACUUM INTO on a read-only connection of its own): a snapshot of the
// last commit, taken under SQLite's locking protocol, which neither blocks
// the server's writer nor touches its -wal. Nothing here opens the database
// or its siblings outside SQLite: a stray descriptor closed in a process
// drops that process's POSIX locks on the file (issue 26). dst must not
// exist (it is never overwritten); the copy has mode 0600 and is synced
// and checked (PRAGMA quick_check) before BackupSQLite returns. On error
// no partial dst is left behind.
func BackupSQLite(ctx context.Context, dbPath, dst string) (err error) {
	wrap := func(err error) error { return fmt.Errorf("back up %s to %s: %w", dbPath, dst, err) }
	if st, err := os.Stat(dbPath); err != nil {
		return wrap(err)
	} else if !st.Mode().IsRegular() {
		return wrap(errors.New("the database is not a regular file"))
	}
	// Absolute, so SQLite never reads the name as a URI.
	abs, err := filepath.Abs(dst)
	if err != nil {
		return wrap(err)
	}
	// O_EXCL: the check that dst is new and its creation are one step, and
	// the file is 0600 from the start. VACUUM INTO accepts an empty file.
	f, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return wrap(fmt.Errorf("%w; not overwriting it", err))
	}
	if err != nil {
		return wrap(err)
	}
	if err := f.Close(); err != nil {
		return wrap(err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(abs)
			_ = os.Remove(abs + "-journal")
		}
	}()

	src, err := sql.Open("sqlite3", sqliteDSN(dbPath, url.Values{
		"mode":          {"ro"},
		"_busy_timeout": {fmt.Sprint(defaultBusyTimeout.Milliseconds())},
	}))
	if err != nil {
		return wrap(err)
	}
	defer src.Close()
	src.SetMaxOpenConns(1)
	if _, err := src.ExecContext(ctx, "VACUUM INTO ?", abs); err != nil {
		return wrap(fmt.Errorf("vacuum into: %w", err))
	}
	if err := src.Close(); err != nil {
		return wrap(err)
	}
	// VACUUM INTO does not sync its output; the copy must survive a power
	// loss once we said it is done. dst is a new file no SQLite has open.
	if err := syncPath(abs); err != nil {
		return wrap(err)
	}
	if err := syncPath(filepath.Dir(abs)); err != nil {
		return wrap(err)
	}
	if err := checkCopy(ctx, abs); err != nil {
		return wrap(err)
	}
	return nil
}

// checkCopy opens the copy read-only and runs SQLite's quick check on it.
func checkCopy(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite3", sqliteDSN(path, url.Values{"mode": {"ro"}}))
	if err != nil {
		return err
	}
	defer db.Close()
	var res string
	if err := db.QueryRowContext(ctx, "PRAGMA quick_check").Scan(&res); err != nil {
		return fmt.Errorf("check the copy: %w", err)
	}
	if res != "ok" {
		return fmt.Errorf("check the copy: %s", res)
	}
	return db.Close()
}

// syncPath fsyncs a file or directory.
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return f.Close()
}
