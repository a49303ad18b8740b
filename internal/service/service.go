package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"harness/internal/auth"
	"harness/internal/compact"
	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/models"
	"harness/internal/session"
	"harness/internal/workspace"
)

// Deps are the service's dependencies.
type Deps struct {
	Log     *slog.Logger
	Store   *models.Store
	Manager *driver.Manager
	Auth    *auth.Service
	// Workspaces makes, opens, clones, copies and removes session
	// workspaces.
	Workspaces *workspace.Manager
	// Settings stores the admin's workspace roots, clone hosts and route
	// network choices; nil keeps none (tests).
	Settings WorkspaceSettings
	// Meta turns a stored session row into what the driver starts an agent
	// from (app passes driverstore.Store); required.
	Meta AgentMeta
	// AttachmentMax caps one uploaded image in bytes (0:
	// DefaultAttachmentMax).
	AttachmentMax int64
	// Compaction are the options compact.Install got; their Meter (shared
	// with the automatic triggers and the renderer) measures the context
	// figures, and manual compactions (Compact) run with them. Providers and
	// CommandID are set per call. The zero value works (a private meter).
	Compaction compact.Options
	// Replicas answers which replica runs a session and how (replicas.go);
	// nil on SQLite.
	Replicas Replicas
}

// AgentMeta is what the service needs of the adapter between the store
// and the driver (driverstore.Store): the metadata an agent starts from,
// out of the row the service just stored. The service does not import the
// adapter, so the adapter is free to depend on both sides.
type AgentMeta interface {
	MetaOf(row *models.Session) driver.Meta
}

// Service is the application layer over sessions.
type Service struct {
	log       *slog.Logger
	store     *models.Store
	mgr       *driver.Manager
	meta      AgentMeta
	auth      *auth.Service
	providers *llm.Registry
	ws        *workspace.Manager
	settings  WorkspaceSettings
	jobs      *jobs
	compact   compact.Options
	meters    *meterCache
	attachMax int64
	replicas  Replicas
	imports   importSlots

	changesMu sync.RWMutex
	nextSub   int
	changes   map[int]func(Change)
}

// New builds a Service. It starts no goroutines.
func New(d Deps) *Service {
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	copts := d.Compaction
	if copts.Meter == nil {
		copts.Meter = compact.NewMeter()
	}
	if copts.Logger == nil {
		copts.Logger = log
	}
	if d.Settings == nil {
		d.Settings = &memSettings{routes: map[string]bool{}}
	}
	if d.Meta == nil {
		panic("service: New needs Deps.Meta (driverstore.Store)")
	}
	return &Service{
		log: log, store: d.Store, mgr: d.Manager, meta: d.Meta, auth: d.Auth,
		providers: d.Manager.Providers(), ws: d.Workspaces, settings: d.Settings, jobs: newJobs(),
		compact: copts, meters: newMeterCache(meterCacheSize),
		changes:   map[int]func(Change){},
		attachMax: cmp.Or(d.AttachmentMax, DefaultAttachmentMax),
		replicas:  d.Replicas,
		imports:   newImportSlots(),
	}
}

// Authorize checks that a may do act on session id and returns a's role.
// Errors are *Error (unauthorized, not_found, forbidden, internal).
func (s *Service) Authorize(ctx context.Context, a *auth.Actor, id string, act auth.Action) (auth.SessionRole, error) {
	if id == "" {
		return auth.SessionRoleNone, Errorf(CodeBadRequest, "session is required")
	}
	role, err := s.auth.Authorize(ctx, a, id, act)
	if err != nil {
		return role, s.fail(ctx, "authorize", err)
	}
	return role, nil
}

// fail classifies err and logs internal failures; the returned *Error is
// what the client sees.
func (s *Service) fail(ctx context.Context, op string, err error) error {
	e := AsError(err)
	if e.Code == CodeInternal {
		s.log.ErrorContext(ctx, "service failure", "op", op, "err", err)
	}
	return e
}

// agent returns the live agent of an authorized session, loading it, and
// pinned until release is called: an agent unloaded for idleness between
// the lookup and the call on it would refuse the call (ErrDisposed).
func (s *Service) agent(ctx context.Context, id string) (*driver.Agent, func(), error) {
	a, release, err := s.mgr.Pin(ctx, id)
	if err != nil {
		return nil, nil, s.fail(ctx, "load session", err)
	}
	return a, release, nil
}

// by is who acted, as the log records it.
func by(a *auth.Actor) *session.Actor {
	if a == nil {
		return nil
	}
	return &session.Actor{UserID: a.UserID, Name: displayName(a)}
}

func displayName(a *auth.Actor) string {
	if a.DisplayName != "" {
		return a.DisplayName
	}
	return a.Name
}

// requireUser refuses anonymous actors and share links.
func (s *Service) requireUser(a *auth.Actor) error {
	if err := s.auth.CanCreateSession(a); err != nil {
		return AsError(err)
	}
	return nil
}

// ChangeKind says what happened to a session.
type ChangeKind string

// Change kinds.
const (
	// ChangeUpdated: created or changed; its visibility is unchanged or
	// wider (a member was added).
	ChangeUpdated ChangeKind = "updated"
	// ChangeDeleted: the session is gone; Users could see it.
	ChangeDeleted ChangeKind = "deleted"
	// ChangeRevoked: Users lost access to the session (membership removed).
	ChangeRevoked ChangeKind = "revoked"
)

// Change is a session event for sidebars.
type Change struct {
	Kind    ChangeKind `json:"kind"`
	Session string     `json:"session"`
	// Users are the user ids concerned by deleted and revoked changes.
	Users []string `json:"users,omitempty"`
}

// SubscribeChanges calls fn for every change, synchronously and in order;
// fn must not block. cancel stops the calls.
func (s *Service) SubscribeChanges(fn func(Change)) (cancel func()) {
	s.changesMu.Lock()
	defer s.changesMu.Unlock()
	s.nextSub++
	id := s.nextSub
	s.changes[id] = fn
	return func() {
		s.changesMu.Lock()
		defer s.changesMu.Unlock()
		delete(s.changes, id)
	}
}

func (s *Service) emit(c Change) {
	s.changesMu.RLock()
	defer s.changesMu.RUnlock()
	for _, fn := range s.changes {
		func() {
			defer func() {
				if r := recover(); r != nil {
					s.log.Error("change listener panicked", "panic", fmt.Sprint(r))
				}
			}()
			fn(c)
		}()
	}
}

// isNotFound reports a missing row.
func isNotFound(err error) bool {
	return errors.Is(err, models.ErrNotFound) || errors.Is(err, auth.ErrNotFound)
}
