package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
)

const defaultBusyTimeout = 5 * time.Second

// openSQLite opens one writer connection and a query-only reader pool on the
// same file. A lock file next to the database keeps a second server process
// out: two processes would each cache the sessions' next seq.
func openSQLite(ctx context.Context, log *slog.Logger, cfg Config) (_ *DB, err error) {
	path := cfg.DSN
	if path == "" {
		return nil, errors.New("open database: empty sqlite path")
	}
	if path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("open database %s: want a plain file path", path)
	}
	wrap := func(err error) error {
		if isSQLiteBusy(err) {
			return fmt.Errorf("open database %s: %w", path, ErrLocked)
		}
		return fmt.Errorf("open database %s: %w", path, err)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o711); err != nil { // traversable, not listable: see app.New
			return nil, wrap(err)
		}
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, wrap(errors.New("is a directory"))
	}
	db := &DB{Driver: DriverSQLite}
	defer func() {
		if err != nil {
			_ = db.Close()
		}
	}()
	lock, err := lockFile(path + ".lock")
	if err != nil {
		return nil, wrap(err)
	}
	db.closers = append(db.closers, lock)
	// Under the lock, so no other server has the files open, and before
	// SQLite opens the file, so it creates nothing with the umask's mode.
	if err := createPrivate(path); err != nil {
		return nil, wrap(err)
	}
	if err := restrictFiles(log, path); err != nil {
		return nil, wrap(err)
	}

	busy := cfg.BusyTimeout
	if busy <= 0 {
		busy = defaultBusyTimeout
	}
	// The DSN's busy timeout is applied by the driver before any other
	// pragma, so journal_mode=WAL already waits for a busy lock.
	common := url.Values{
		"_busy_timeout": {fmt.Sprint(busy.Milliseconds())},
		"_foreign_keys": {"1"},
	}
	wv := cloneValues(common)
	wv.Set("_journal_mode", "WAL")
	wv.Set("_synchronous", "NORMAL")
	wv.Set("_txlock", "immediate")
	w, err := sql.Open("sqlite3", sqliteDSN(path, wv))
	if err != nil {
		return nil, wrap(err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	db.closers = append([]io.Closer{w}, db.closers...)
	if err := w.PingContext(ctx); err != nil {
		return nil, wrap(err)
	}
	// Take and release the write lock once, so a database held by another
	// connection fails here rather than at the first append.
	if _, err := w.ExecContext(ctx, "BEGIN IMMEDIATE; COMMIT"); err != nil {
		return nil, wrap(err)
	}

	rv := cloneValues(common)
	rv.Set("_query_only", "1")
	rv.Set("_txlock", "deferred")
	r, err := sql.Open("sqlite3", sqliteDSN(path, rv))
	if err != nil {
		return nil, wrap(err)
	}
	n := cfg.ReadConns
	if n <= 0 {
		n = 4
	}
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	r.SetConnMaxIdleTime(0)
	db.closers = append([]io.Closer{r}, db.closers...) // readers close first

	db.w, db.r = w, r
	gcfg := gormConfig(log)
	if db.W, err = gorm.Open(sqlite.New(sqlite.Config{Conn: w}), gcfg); err != nil {
		return nil, wrap(err)
	}
	if db.R, err = gorm.Open(sqlite.New(sqlite.Config{Conn: r}), gcfg); err != nil {
		return nil, wrap(err)
	}
	if err := r.PingContext(ctx); err != nil {
		return nil, wrap(err)
	}
	if err := migrate(ctx, db); err != nil {
		return nil, wrap(err)
	}
	// SQLite gives the -wal and -shm files it creates the database file's
	// mode; this holds on file systems where it cannot. By path only: SQLite
	// has the files open now (see restrictFiles).
	if err := restrictFiles(log, path); err != nil {
		return nil, wrap(err)
	}
	return db, nil
}

// createPrivate creates the database file with mode 0600 when it does not
// exist yet, so SQLite never creates it with the umask's mode. It must run
// before SQLite opens the file: closing any descriptor of a file drops all
// of this process's POSIX locks on it, SQLite's included (issue 26).
func createPrivate(path string) error {
	if runtime.GOOS == "windows" {
		return nil // no group/other permission bits to take away
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return err // exists (nil), or cannot tell
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// restrictFiles takes group and other permission bits from the database
// file and its -wal, -shm and -journal siblings: they hold every session's
// transcript and the sealed API keys. It works by path (stat, chmod) and
// never opens the files, so it is safe while SQLite holds its locks on
// them, in this process or another.
func restrictFiles(log *slog.Logger, path string) error {
	if runtime.GOOS == "windows" {
		return nil // no group/other permission bits to take away
	}
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		perm := st.Mode().Perm()
		if perm&0o077 == 0 {
			continue
		}
		if err := os.Chmod(p, 0o600); err != nil {
			return fmt.Errorf("restrict %s (mode %#o) to its owner: %w", p, perm, err)
		}
		log.Warn("database file was open to group or others; its mode is now 0600", "path", p, "was", fmt.Sprintf("%#o", perm))
	}
	return nil
}

// sqliteDSN builds a file: URI, escaping the characters SQLite's URI parser
// treats specially.
func sqliteDSN(path string, params url.Values) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return "file:" + r.Replace(path) + "?" + params.Encode()
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// isSQLiteBusy reports SQLITE_BUSY / SQLITE_LOCKED.
func isSQLiteBusy(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked
	}
	return false
}
