package service

import (
	"context"

	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/session"
)

// Reads on replicas (PostgreSQL, docs/deploy.md "Replicas on PostgreSQL").
// A read of a session another live replica runs (GetSession, PageSession,
// Events) fails with a *driver.NotOwnerError, which the web layer turns
// into a forward to the owner (web/forward.go): the owner's answer is
// authoritative. A read never loads the agent, which would take the lease:
// a session nobody runs, or one whose owner could not be reached, is
// answered from the stored log. The session list's status column comes
// from the owners' notifications (replica/status.go).

// Replicas is what reads ask of the replica set; nil on SQLite, whose one
// process runs every session.
type Replicas interface {
	// RemoteOwner names the live replica other than this one that holds
	// session id's lease (ok false: none does, or this one does).
	RemoteOwner(ctx context.Context, id string) (owner, addr string, ok bool, err error)
	// Statuses are the statuses of those of ids other live replicas run.
	Statuses(ctx context.Context, ids []string) map[string]driver.Status
}

type readHereKey struct{}

// ReadHere marks a read to be answered by this replica, from what it has,
// rather than sent to the session's owner: the web layer's read that was
// already forwarded here, or whose forward failed.
func ReadHere(ctx context.Context) context.Context {
	return context.WithValue(ctx, readHereKey{}, true)
}

// elsewhere returns a *driver.NotOwnerError when another live replica runs
// session id and ctx does not ask for a local answer.
func (s *Service) elsewhere(ctx context.Context, id string) error {
	if s.replicas == nil || ctx.Value(readHereKey{}) != nil {
		return nil
	}
	if _, ok := s.mgr.Lookup(id); ok {
		return nil
	}
	owner, addr, ok, err := s.replicas.RemoteOwner(ctx, id)
	if err != nil {
		return s.fail(ctx, "find the session's owner", err)
	}
	if !ok {
		return nil
	}
	return &driver.NotOwnerError{Session: id, Owner: owner, Addr: addr}
}

// remoteStatuses sets the status of the rows other replicas run, as they
// notified it; a row nobody runs stays idle.
func (s *Service) remoteStatuses(ctx context.Context, rows []SessionRow) {
	if s.replicas == nil {
		return
	}
	var ids []string
	for _, r := range rows {
		if _, here := s.mgr.Lookup(r.ID); !here {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return
	}
	st := s.replicas.Statuses(ctx, ids)
	for i := range rows {
		if v, ok := st[rows[i].ID]; ok {
			rows[i].Status = v
		}
	}
}

// storedQueue is the queue the stored log holds (what a load would
// restore).
func storedQueue(l *session.Log) (driver.Queue, error) {
	next, steer, err := session.Inbox(l.Events(0, l.Len()), l.Header().SeedLength)
	if err != nil {
		return driver.Queue{}, err
	}
	return driver.Queue{Queued: orEmpty(next), Steering: orEmpty(steer)}, nil
}

func orEmpty(m []llm.Message) []llm.Message {
	if m == nil {
		return []llm.Message{}
	}
	return m
}
