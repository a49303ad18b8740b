package models

import (
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Lookup errors; wrapped with the id that was looked up.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
)

// Store is the persistence API over DB and the batched writer. Reads use
// the reader pool; session metadata writes use the writer connection; event
// appends go through Enqueue and Flush (the batched writer W).
type Store struct {
	DB  *DB
	W   *Writer
	log *slog.Logger

	probeMu  sync.Mutex
	probedAt time.Time // last write probe (Writable)
}

// NewStore builds a Store. The writer must write to the same db.
func NewStore(log *slog.Logger, db *DB, w *Writer) *Store {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{DB: db, W: w, log: log}
}

// pg reports whether the store runs on PostgreSQL.
func (s *Store) pg() bool { return s.DB.Driver == DriverPostgres }

// q adapts a query written with ? placeholders to the driver.
func (s *Store) q(query string) string { return rebind(s.pg(), query) }
