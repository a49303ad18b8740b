package app

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"syscall"

	"harness/internal/models"
)

// A replica's id is stable across restarts (config.DefaultReplicaID, or
// HARNESS_REPLICA_ID), so a process that died holding leases is succeeded
// by one of the same id, which takes them back at once instead of
// waiting for them to lapse. The database cannot tell that successor from
// a second live process misconfigured with the same id; a lock file in
// the data directory can: while a process lives it holds the id's lock,
// so whoever takes the lock knows the row of that id is a dead process's.

// lockReplicaID takes the lock of this replica's id in the data
// directory. held is false when no lock file can be made there (a
// read-only directory): the start then waits for a dead predecessor's
// heartbeat to lapse, as before. Another live process holding it is an
// error.
func (a *App) lockReplicaID() (held bool, err error) {
	dir := filepath.Join(a.Config.DataDir, "replicas")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		a.Log.Warn("no replica id lock: a restart waits for its predecessor's heartbeat to lapse", "err", err)
		return false, nil
	}
	path := filepath.Join(dir, url.PathEscape(a.Leases.ID())+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		a.Log.Warn("no replica id lock: a restart waits for its predecessor's heartbeat to lapse", "err", err)
		return false, nil
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, fmt.Errorf("replica %s: %w: another process on this host and data directory holds %s; give each replica its own HARNESS_REPLICA_ID", a.Leases.ID(), models.ErrReplicaInUse, path)
		}
		a.Log.Warn("no replica id lock: a restart waits for its predecessor's heartbeat to lapse", "err", err)
		return false, nil
	}
	// Held until the process exits (the kernel drops it, crash or not).
	a.idLock = f
	return true, nil
}
