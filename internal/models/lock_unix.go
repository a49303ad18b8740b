//go:build unix

package models

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// fileLock is an exclusive advisory lock held for the life of the process's
// DB; the kernel releases it when the process dies, so a crash never leaves
// a stale lock behind.
type fileLock struct{ f *os.File }

func lockFile(path string) (*fileLock, error) {
	// 0600 like the database: only the server's user has any business
	// with it. A lock file from an older version is tightened best-effort
	// (it holds no data).
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	if st, err := f.Stat(); err == nil && st.Mode().Perm()&0o077 != 0 {
		_ = f.Chmod(0o600)
	}
	// A flock belongs to the open file description, which a child forked
	// by this process shares until it execs: a lock closed here a moment
	// ago may still be held for a few milliseconds by a child starting
	// (a tool process, a test's server). Retry briefly before calling the
	// database locked.
	deadline := time.Now().Add(lockRetry)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &fileLock{f: f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("lock file: %w", err)
		}
		if time.Now().After(deadline) {
			_ = f.Close()
			return nil, ErrLocked
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lockRetry bounds the wait for a lock another process may be releasing.
const lockRetry = 500 * time.Millisecond

func (l *fileLock) Close() error {
	if l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the descriptor releases the lock
	l.f = nil
	return err
}
