package driverstore

import (
	"context"
	"errors"

	"harness/internal/driver"
	"harness/internal/models"
)

// Leases implements driver.Leases over the database's session leases
// (PostgreSQL) and the store's batched writer: a lease taken starts the
// session's term in the writer, so its appends carry the new epoch; a lease
// lost ends it, so nothing more is stored.
type Leases struct {
	L *models.Leases
	S *models.Store
}

var _ driver.Leases = Leases{}

// Acquire takes the lease and starts the writer's term under its epoch.
func (d Leases) Acquire(ctx context.Context, sessionID string) (int64, error) {
	epoch, err := d.L.Acquire(ctx, sessionID)
	var held *models.LeaseHeldError
	if errors.As(err, &held) {
		return 0, &driver.NotOwnerError{Session: sessionID, Owner: held.Owner, Addr: held.Addr}
	}
	if err != nil {
		return 0, err
	}
	d.S.Own(sessionID, epoch)
	return epoch, nil
}

// Renew extends the held leases and the replica's heartbeat.
func (d Leases) Renew(ctx context.Context, held map[string]int64) (map[string]bool, error) {
	return d.L.Renew(ctx, held)
}

// Release gives a lease up.
func (d Leases) Release(ctx context.Context, sessionID string, epoch int64) error {
	return d.L.Release(ctx, sessionID, epoch)
}

// Handover gives a lease up and tells the other replicas to take it.
func (d Leases) Handover(ctx context.Context, sessionID string, epoch int64) error {
	return d.L.Handover(ctx, sessionID, epoch)
}

// Lost ends the session's term in the writer.
func (d Leases) Lost(sessionID string, epoch int64, _ driver.LeaseLoss) {
	d.S.Disown(sessionID, epoch)
}

// FencedEpoch reports whether err is the writer's refusal of appends under
// a stale lease epoch, and that epoch (for driver.Manager.LeaseLost).
func FencedEpoch(err error) (int64, bool) {
	var fe *models.FencedError
	if errors.As(err, &fe) && fe.Stored >= 0 {
		return fe.Epoch, true
	}
	return 0, false
}
