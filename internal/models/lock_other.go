//go:build !unix

package models

// fileLock is a no-op where flock is unavailable; SQLite's own locking
// still serialises writers.
type fileLock struct{}

func lockFile(string) (*fileLock, error) { return &fileLock{}, nil }

func (*fileLock) Close() error { return nil }
