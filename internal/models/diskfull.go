package models

import (
	"errors"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
)

// IsDiskFull reports whether err says the disk the server writes to is
// full: ENOSPC from the file system, SQLITE_FULL (or an I/O error whose
// cause was ENOSPC) from SQLite, disk_full (53100) from PostgreSQL. It is
// the one classification the service maps to insufficient_storage.
func IsDiskFull(err error) bool {
	if errors.Is(err, syscall.ENOSPC) {
		return true
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrFull || se.SystemErrno == syscall.ENOSPC
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "53100"
}
