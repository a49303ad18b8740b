package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// An import is a small state machine whose state is a journal file,
// <data>/imports/<session id>, held under an exclusive flock while the
// import runs:
//
//	begun    the file exists (before the workspace is made)
//	stored   the row and every event are committed, in one transaction
//	complete the file is removed: only now is the session kept
//
// Import removes the file once it completed, or once it undid what it had
// made after a failure. A file nobody holds locked is an import whose
// process died (the kernel drops a dead process's flock):
// RepairImports, at start, deletes what it made (row, events, images,
// workspace) and then the file, so an import a crash cut short leaves
// nothing, exactly once. The lock keeps a repair from undoing the import
// of another live process sharing the data directory (replicas on one
// volume).

// importsDir holds the journal: beside the workspaces, in the data
// directory.
func (s *Service) importsDir() string {
	return filepath.Join(filepath.Dir(s.ws.FreshRoot()), "imports")
}

// importJournal is an import in progress: its locked journal file.
type importJournal struct{ f *os.File }

// beginImport records the import of session id as begun.
func (s *Service) beginImport(id string) (*importJournal, error) {
	dir := s.importsDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("import journal: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, id), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("import journal: %w", err)
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil && !stillAt(f) {
		// A starting replica's repair took the file before the lock.
		err = errors.New("the journal file was removed")
	}
	if err != nil {
		_ = os.Remove(f.Name())
		_ = f.Close()
		return nil, fmt.Errorf("import journal: lock: %w", err)
	}
	return &importJournal{f: f}, nil
}

// stillAt reports whether f is still the file at its path (not removed
// meanwhile).
func stillAt(f *os.File) bool {
	at, err := os.Stat(f.Name())
	if err != nil {
		return false
	}
	held, err := f.Stat()
	return err == nil && os.SameFile(at, held)
}

// complete removes the journal file: the import completed, or what it made
// is undone. The file goes before the lock, so no repair finds it
// unlocked.
func (j *importJournal) complete() error {
	err := os.Remove(j.f.Name())
	return errors.Join(err, j.f.Close())
}

// abandon releases the journal but keeps the file: undoing the import
// failed, so the next start finishes the job.
func (j *importJournal) abandon() { _ = j.f.Close() }

// finishFailedImport ends a failed import's journal: the file is removed
// when undoing what the import made succeeded (undo is nil), else kept for
// RepairImports.
func (s *Service) finishFailedImport(ctx context.Context, id string, j *importJournal, undo error) {
	if undo != nil {
		s.log.ErrorContext(ctx, "import: undo failed; the next start removes the rest", "session", id, "err", undo)
		j.abandon()
		return
	}
	if err := j.complete(); err != nil {
		s.log.WarnContext(ctx, "import: remove journal", "session", id, "err", err)
	}
}

// RepairImports undoes the imports a crash (or a kill) cut short: for every
// journal file no live process holds, it deletes the session's row, events
// and images and its workspace, then the file. It runs at start, before the
// server serves (app.Start), and is idempotent.
func (s *Service) RepairImports(ctx context.Context) error {
	dir := s.importsDir()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("repair imports: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if err := s.repairImport(ctx, filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// repairImport undoes the import a journal file at path records, unless its
// importer is alive.
func (s *Service) repairImport(ctx context.Context, path string) error {
	id := filepath.Base(path)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // it completed meanwhile
	}
	if err != nil {
		return fmt.Errorf("repair import %s: %w", id, err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); errors.Is(err, syscall.EWOULDBLOCK) {
		return nil // a live process is importing it
	} else if err != nil {
		return fmt.Errorf("repair import %s: lock: %w", id, err)
	}
	if !stillAt(f) {
		return nil // it completed between the open and the lock
	}
	if err := s.store.DeleteSession(ctx, id); err != nil && !isNotFound(err) {
		return fmt.Errorf("repair import %s: %w", id, err)
	}
	s.store.Forget(id)
	if dir, err := s.ws.FreshDir(id); err == nil {
		if err := s.ws.Remove(id, dir); err != nil {
			return fmt.Errorf("repair import %s: %w", id, err)
		}
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("repair import %s: %w", id, err)
	}
	s.log.InfoContext(ctx, "interrupted import removed", "session", id)
	return nil
}
