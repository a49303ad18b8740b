// Package driverstore adapts the GORM store to what the driver needs
// (driver.Store) and turns a stored row into the driver's metadata for the
// service (service.AgentMeta): the driver never imports models, and the
// service never imports this adapter (app passes it).
package driverstore

import (
	"context"
	"errors"
	"fmt"

	"harness/internal/driver"
	"harness/internal/models"
	"harness/internal/session"
)

// Store implements driver.Store over a models.Store.
type Store struct {
	S *models.Store
}

var (
	_ driver.Store         = Store{}
	_ driver.ChildSessions = Store{}
)

// ErrNotFound is returned for an unknown session.
var ErrNotFound = models.ErrNotFound

// SessionMeta reads the session row.
func (d Store) SessionMeta(ctx context.Context, id string) (driver.Meta, error) {
	row, err := d.S.GetSession(ctx, id)
	if err != nil {
		return driver.Meta{}, err
	}
	return MetaOf(row), nil
}

// MetaOf converts a session row into driver metadata (service.AgentMeta).
func (Store) MetaOf(row *models.Session) driver.Meta { return MetaOf(row) }

// MetaOf converts a session row into driver metadata.
func MetaOf(row *models.Session) driver.Meta {
	m := driver.Meta{
		ID:        row.ID,
		Workspace: row.Workspace,
		Provider:  row.Provider,
		Model:     row.Model,
		Header: session.Header{
			ID:            row.ID,
			CreatedAt:     row.CreatedAt.UnixMilli(),
			Cwd:           row.Workspace,
			ParentSession: row.ParentID,
			SeedLength:    row.SeedLength,
		},
	}
	if row.Kind == models.KindSubagent {
		m.Subagent, m.Parent = true, row.ParentID
	}
	return m
}

// CreateChild stores a subagent's session (driver.ChildSessions): the
// parent's owner, workspace (shared, not a copy: its kind says so, and
// deleting the child leaves it) and network policy, the parent as
// ParentID, kind subagent.
func (d Store) CreateChild(ctx context.Context, parentID string, c driver.ChildSpec) (driver.Meta, error) {
	p, err := d.S.GetSession(ctx, parentID)
	if err != nil {
		return driver.Meta{}, fmt.Errorf("create child of %s: %w", parentID, err)
	}
	if p.Kind == models.KindSubagent {
		return driver.Meta{}, fmt.Errorf("create child of %s: the parent is a subagent", parentID)
	}
	row := &models.Session{
		ID: c.ID, OwnerID: p.OwnerID, Title: c.Title,
		Workspace: p.Workspace, WorkspaceKind: models.KindSubagent, WorkspaceSource: p.ID,
		Network: p.Network, Provider: c.Provider, Model: c.Model, Mode: string(c.Mode),
		ParentID: p.ID, Kind: models.KindSubagent,
	}
	if err := d.S.CreateSession(ctx, row); err != nil {
		return driver.Meta{}, fmt.Errorf("create child of %s: %w", parentID, err)
	}
	return MetaOf(row), nil
}

// LoadLog loads the stored log with crash repair applied once.
func (d Store) LoadLog(ctx context.Context, id string, clock func() int64) (*session.Log, error) {
	l, _, err := d.S.LoadLog(ctx, id, clock)
	return l, err
}

// Enqueue hands an appended event to the batched writer.
func (d Store) Enqueue(id string, ev session.Event) { d.S.Enqueue(id, ev) }

// Flush waits until id's appended events are durable.
func (d Store) Flush(ctx context.Context, id string) error { return d.S.Flush(ctx, id) }

// SetPendingInbox records the queue length of a session.
func (d Store) SetPendingInbox(ctx context.Context, id string, n int) error {
	err := d.S.UpdateSession(ctx, id, models.SessionUpdate{PendingInbox: &n})
	if errors.Is(err, models.ErrNotFound) {
		return nil // deleted meanwhile
	}
	return err
}

// PendingInboxSessions lists sessions with waiting queue items.
func (d Store) PendingInboxSessions(ctx context.Context) ([]string, error) {
	rows, err := d.S.SessionsWithPendingInbox(ctx)
	if err != nil {
		return nil, fmt.Errorf("pending inbox sessions: %w", err)
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids, nil
}
