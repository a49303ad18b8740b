package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Replicas and session leases (PostgreSQL only; docs/deploy.md "Replicas
// on PostgreSQL").
//
// A replica is one server process on the database: a replicas row with its
// id, advertised address and heartbeat, written after the process holds
// its listener and before it touches any session. A session's agent runs
// on the replica holding the session's lease: a session_leases row with the
// owner, an expiry and a fencing epoch. Every acquisition increments the
// epoch and copies it to sessions.lease_epoch in the same statement; the
// batched writer advances a session's head only where lease_epoch still
// equals the epoch its appends carry (writer_tx.go), so a replica that lost
// the lease, even one that wakes from a long pause without knowing it,
// cannot append. Every time is the database's (now()), so the replicas'
// clocks need not agree.
//
// SQLite runs one process (its file lock): it has neither table and the
// writer's SQL is unchanged.

// Lease errors.
var (
	// ErrLeaseHeld is wrapped by Acquire when another live replica holds
	// the session's lease (*LeaseHeldError says which).
	ErrLeaseHeld = errors.New("session lease held by another replica")
	// ErrReplicaInUse is wrapped by Register when a live replica already
	// uses the id.
	ErrReplicaInUse = errors.New("replica id in use by a live replica")
	// ErrNotRegistered is wrapped by Acquire when this replica has no
	// replicas row: nothing may touch a session before the process holds
	// its identity.
	ErrNotRegistered = errors.New("replica not registered")
	// ErrFenced is wrapped by the writer's refusal of a batch whose epoch
	// is no longer the session's (*FencedError says which).
	ErrFenced = errors.New("stale lease epoch: another replica owns the session")
)

// LeaseHeldError names the replica that holds a session's lease.
type LeaseHeldError struct {
	Session string
	Owner   string // replica id
	Addr    string // its advertised address ("" when unknown)
	Expires time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("session %s: %v: %s (%s) until %s", e.Session, ErrLeaseHeld, e.Owner, e.Addr, e.Expires.Format(time.RFC3339Nano))
}

func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }

// FencedError is the writer's refusal of appends made under an epoch the
// session no longer has.
type FencedError struct {
	Session string
	Epoch   int64 // the epoch the refused appends carried
	Stored  int64 // the session's epoch in the database
}

func (e *FencedError) Error() string {
	if e.Stored < 0 {
		return fmt.Sprintf("session %s: lease term %d ended in this process: %v", e.Session, e.Epoch, ErrFenced)
	}
	return fmt.Sprintf("session %s: appends carry epoch %d, the session's is %d: %v", e.Session, e.Epoch, e.Stored, ErrFenced)
}

func (e *FencedError) Unwrap() error { return ErrFenced }

// leaseSchema creates the replica and lease tables and the sessions' epoch
// column on PostgreSQL (a schema step: idempotent). A lease row is kept
// when released (owner NULL) so its epoch only ever grows; it goes with
// its session. owner references replicas so that no lease can be taken
// by a process that has not registered.
func leaseSchema(ctx context.Context, db *DB) error {
	if db.Driver != DriverPostgres {
		return nil
	}
	for _, stmt := range []string{
		`CREATE TABLE IF NOT EXISTS replicas (
			id text PRIMARY KEY,
			addr text NOT NULL DEFAULT '',
			started_at timestamptz NOT NULL DEFAULT now(),
			heartbeat_at timestamptz NOT NULL DEFAULT now())`,
		`CREATE TABLE IF NOT EXISTS session_leases (
			session_id varchar(36) PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
			owner text REFERENCES replicas(id) ON DELETE SET NULL,
			epoch bigint NOT NULL,
			expires_at timestamptz NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS idx_session_leases_owner ON session_leases (owner)`,
		`ALTER TABLE sessions ADD COLUMN IF NOT EXISTS lease_epoch bigint NOT NULL DEFAULT 0`,
		// handover: released by a draining replica with queued input
		// left; the live replicas take it at once (Handover).
		`ALTER TABLE session_leases ADD COLUMN IF NOT EXISTS handover boolean NOT NULL DEFAULT false`,
	} {
		if err := db.W.WithContext(ctx).Exec(stmt).Error; err != nil {
			return err
		}
	}
	return nil
}

// Leases registers one replica and takes, renews and releases its session
// leases. PostgreSQL only.
type Leases struct {
	db  *sql.DB
	id  string
	ttl time.Duration
	// stale is how old an owner's heartbeat may be before its leases may
	// be taken although they have not expired: it died or hangs.
	stale time.Duration
	// channel is LeaseChannel on this database's schema.
	channel string
}

// NewLeases returns the leases of replica id, each valid for ttl after it
// was taken or last renewed, and for no longer than stale (at most ttl)
// after the owner's last heartbeat.
func NewLeases(db *DB, id string, ttl, stale time.Duration) (*Leases, error) {
	if db.Driver != DriverPostgres {
		return nil, fmt.Errorf("session leases need PostgreSQL, not %s", db.Driver)
	}
	if id == "" || ttl <= 0 {
		return nil, errors.New("session leases need a replica id and a positive TTL")
	}
	if stale <= 0 || stale > ttl {
		stale = ttl
	}
	return &Leases{db: db.w, id: id, ttl: ttl, stale: stale, channel: db.Channel(LeaseChannel)}, nil
}

// Stale is how old an owner's heartbeat may be before its leases may be
// taken.
func (l *Leases) Stale() time.Duration { return l.stale }

func (l *Leases) staleMillis() int64 { return max(l.stale.Milliseconds(), 1) }

// A lease is live while it has not expired and its owner's heartbeat is
// younger than the stale bound; liveLease is that condition on a lease sl
// joined to its owner's row r, with the bound as parameter $n.
func liveLease(n int) string {
	return fmt.Sprintf("sl.expires_at >= now() AND r.heartbeat_at >= now() - $%d * interval '1 millisecond'", n)
}

// ID is the replica's id.
func (l *Leases) ID() string { return l.id }

// TTL is how long a lease lasts without renewal.
func (l *Leases) TTL() time.Duration { return l.ttl }

func (l *Leases) ttlMillis() int64 { return max(l.ttl.Milliseconds(), 1) }

// Register writes the replica's row (id, advertised address, heartbeat).
// A row of the same id whose heartbeat is older than the TTL is a dead
// process's and is taken over; a live one fails with ErrReplicaInUse,
// unless restarted: the caller knows no other process uses the id (it
// holds the id's lock file), so the row is its own dead predecessor's,
// whose leases it then takes back at once (they name its id).
func (l *Leases) Register(ctx context.Context, addr string, restarted bool) error {
	var id string
	err := l.db.QueryRowContext(ctx, `
		INSERT INTO replicas AS r (id, addr, started_at, heartbeat_at) VALUES ($1, $2, now(), now())
		ON CONFLICT (id) DO UPDATE SET addr = excluded.addr, started_at = now(), heartbeat_at = now()
			WHERE r.heartbeat_at < now() - $3 * interval '1 millisecond' OR $4
		RETURNING id`, l.id, addr, l.ttlMillis(), restarted).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("register replica %s: %w (another process with this id sent a heartbeat within %s; give each replica its own HARNESS_REPLICA_ID)", l.id, ErrReplicaInUse, l.ttl)
	}
	if err != nil {
		return fmt.Errorf("register replica %s: %w", l.id, err)
	}
	return nil
}

// Unregister deletes the replica's row; its leases lose their owner (they
// were released already on a clean shutdown).
func (l *Leases) Unregister(ctx context.Context) error {
	if _, err := l.db.ExecContext(ctx, `DELETE FROM replicas WHERE id = $1`, l.id); err != nil {
		return fmt.Errorf("unregister replica %s: %w", l.id, err)
	}
	return nil
}

// Acquire takes the session's lease for this replica and returns its new
// epoch, which the session's appends must carry from now on. It succeeds
// when the lease is free, expired or already this replica's (a process
// re-taking its own lease still gets a new epoch: whatever the earlier
// holder queued is refused). A lease another replica holds fails with a
// *LeaseHeldError. A lease whose owner's heartbeat is older than the stale
// bound is taken although it has not expired: the owner died or hangs,
// and the new epoch fences whatever it still sends (a paused owner that
// wakes finds its renewal refused and stops its agents). One statement:
// the upsert's condition decides, and the
// same statement sets sessions.lease_epoch, on whose row the writer's head
// update waits, so a batch and a takeover are ordered by the row lock.
func (l *Leases) Acquire(ctx context.Context, sessionID string) (int64, error) {
	var epoch int64
	err := l.db.QueryRowContext(ctx, `
		WITH l AS (
			INSERT INTO session_leases AS sl (session_id, owner, epoch, expires_at)
			VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond')
			ON CONFLICT (session_id) DO UPDATE
				SET owner = excluded.owner, epoch = sl.epoch + 1, expires_at = excluded.expires_at, handover = false
				WHERE sl.owner IS NULL OR sl.owner = excluded.owner OR sl.expires_at < now()
					OR EXISTS (SELECT 1 FROM replicas r WHERE r.id = sl.owner
						AND r.heartbeat_at < now() - $4 * interval '1 millisecond')
			RETURNING session_id, epoch),
		s AS (UPDATE sessions SET lease_epoch = l.epoch FROM l WHERE sessions.id = l.session_id)
		SELECT epoch FROM l`, sessionID, l.id, l.ttlMillis(), l.staleMillis()).Scan(&epoch)
	switch {
	case err == nil:
		return epoch, nil
	case errors.Is(err, sql.ErrNoRows):
		return 0, l.heldBy(ctx, sessionID)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23503" { // foreign_key_violation
		if strings.Contains(pe.ConstraintName, "owner") {
			return 0, fmt.Errorf("lease of session %s: %s: %w", sessionID, l.id, ErrNotRegistered)
		}
		return 0, fmt.Errorf("lease of session %s: %w", sessionID, ErrNotFound)
	}
	return 0, fmt.Errorf("lease of session %s: %w", sessionID, err)
}

// heldBy builds the error of a refused acquisition.
func (l *Leases) heldBy(ctx context.Context, sessionID string) error {
	e := &LeaseHeldError{Session: sessionID}
	var owner, addr sql.NullString
	err := l.db.QueryRowContext(ctx, `
		SELECT sl.owner, r.addr, sl.expires_at FROM session_leases sl LEFT JOIN replicas r ON r.id = sl.owner
		WHERE sl.session_id = $1`, sessionID).Scan(&owner, &addr, &e.Expires)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("lease of session %s: %w (holder unknown: %w)", sessionID, ErrLeaseHeld, err)
	}
	e.Owner, e.Addr = owner.String, addr.String
	return e
}

// Renew extends the leases this replica still holds with the given epochs
// and refreshes its heartbeat, in one statement. It returns the sessions
// renewed; a session missing from the result was lost (taken over, or
// deleted).
func (l *Leases) Renew(ctx context.Context, held map[string]int64) (map[string]bool, error) {
	ids := make([]string, 0, len(held))
	epochs := make([]int64, 0, len(held))
	for id, e := range held {
		ids = append(ids, id)
		epochs = append(epochs, e)
	}
	rows, err := l.db.QueryContext(ctx, `
		WITH hb AS (UPDATE replicas SET heartbeat_at = now() WHERE id = $1)
		UPDATE session_leases sl SET expires_at = now() + $2 * interval '1 millisecond'
		FROM unnest($3::text[], $4::bigint[]) AS h(session_id, epoch)
		WHERE sl.session_id = h.session_id AND sl.epoch = h.epoch AND sl.owner = $1
		RETURNING sl.session_id`, l.id, l.ttlMillis(), ids, epochs)
	if err != nil {
		return nil, fmt.Errorf("renew leases of %s: %w", l.id, err)
	}
	defer rows.Close()
	kept := make(map[string]bool, len(held))
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("renew leases of %s: %w", l.id, err)
		}
		kept[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("renew leases of %s: %w", l.id, err)
	}
	return kept, nil
}

// Release gives the lease up if this replica still holds it with epoch;
// the epoch stays, so the next holder's is higher.
func (l *Leases) Release(ctx context.Context, sessionID string, epoch int64) error {
	_, err := l.db.ExecContext(ctx, `
		UPDATE session_leases SET owner = NULL, expires_at = now()
		WHERE session_id = $1 AND owner = $2 AND epoch = $3`, sessionID, l.id, epoch)
	if err != nil {
		return fmt.Errorf("release lease of session %s: %w", sessionID, err)
	}
	return nil
}

// LeaseChannel carries the handover notices: the id of a session whose
// lease a draining replica released with queued input left.
const LeaseChannel = "harness_lease"

// Handover is Release by a draining replica of a session with queued
// input: the lease is marked for handover and announced on LeaseChannel
// in the same statement (the notice is sent at commit, only if the lease
// was still this replica's), so the live replicas take it at once; one
// that missed the notice finds it with Orphaned.
func (l *Leases) Handover(ctx context.Context, sessionID string, epoch int64) error {
	_, err := l.db.ExecContext(ctx, `
		WITH u AS (
			UPDATE session_leases SET owner = NULL, expires_at = now(), handover = true
			WHERE session_id = $1 AND owner = $2 AND epoch = $3
			RETURNING session_id)
		SELECT pg_notify($4, session_id) FROM u`, sessionID, l.id, epoch, l.channel)
	if err != nil {
		return fmt.Errorf("hand over lease of session %s: %w", sessionID, err)
	}
	return nil
}

// Owned lists the sessions whose lease names this replica: at start, what
// a dead predecessor of the same id held, to be taken back at once.
func (l *Leases) Owned(ctx context.Context) ([]string, error) {
	return l.sessions(ctx, "owned leases", `SELECT session_id FROM session_leases WHERE owner = $1`, l.id)
}

// LeaseInfo is a session's lease as stored (tests, diagnostics).
type LeaseInfo struct {
	Owner   string // "" when released
	Epoch   int64
	Expires time.Time
}

// Lease reads a session's lease; ok is false when it never had one.
func (l *Leases) Lease(ctx context.Context, sessionID string) (LeaseInfo, bool, error) {
	var li LeaseInfo
	var owner sql.NullString
	err := l.db.QueryRowContext(ctx, `SELECT owner, epoch, expires_at FROM session_leases WHERE session_id = $1`, sessionID).
		Scan(&owner, &li.Epoch, &li.Expires)
	if errors.Is(err, sql.ErrNoRows) {
		return LeaseInfo{}, false, nil
	}
	if err != nil {
		return LeaseInfo{}, false, fmt.Errorf("read lease of session %s: %w", sessionID, err)
	}
	li.Owner = owner.String
	return li, true, nil
}

// Holder is the replica that holds a session's lease now: its id and
// advertised address; ok is false when nobody does (free, released,
// expired, or its owner's heartbeat is stale).
func (l *Leases) Holder(ctx context.Context, sessionID string) (owner, addr string, ok bool, err error) {
	var o, a sql.NullString
	err = l.db.QueryRowContext(ctx, `
		SELECT sl.owner, r.addr FROM session_leases sl JOIN replicas r ON r.id = sl.owner
		WHERE sl.session_id = $1 AND `+liveLease(2), sessionID, l.staleMillis()).Scan(&o, &a)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("lease holder of %s: %w", sessionID, err)
	}
	return o.String, a.String, true, nil
}

// LeaseHolder is the live replica holding a session's lease.
type LeaseHolder struct {
	Owner string // replica id
	Addr  string // its advertised address
}

// Holders is Holder for many sessions in one statement: the sessions
// nobody holds are absent.
func (l *Leases) Holders(ctx context.Context, sessionIDs []string) (map[string]LeaseHolder, error) {
	out := map[string]LeaseHolder{}
	if len(sessionIDs) == 0 {
		return out, nil
	}
	rows, err := l.db.QueryContext(ctx, `
		SELECT sl.session_id, sl.owner, r.addr FROM session_leases sl JOIN replicas r ON r.id = sl.owner
		WHERE sl.session_id = ANY($1::text[]) AND `+liveLease(2), sessionIDs, l.staleMillis())
	if err != nil {
		return nil, fmt.Errorf("lease holders: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var h LeaseHolder
		if err := rows.Scan(&id, &h.Owner, &h.Addr); err != nil {
			return nil, fmt.Errorf("lease holders: %w", err)
		}
		out[id] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("lease holders: %w", err)
	}
	return out, nil
}

// Orphaned lists, at most limit, the sessions whose lease is held by a
// replica that stopped renewing it (expired, or its heartbeat is stale:
// its process died or hangs), and those a draining replica handed over
// (Handover).
// Their agents were live when the owner went; another replica takes them
// over (crash repair, then the queue).
func (l *Leases) Orphaned(ctx context.Context, limit int) ([]string, error) {
	return l.sessions(ctx, "orphaned leases", `
		SELECT sl.session_id FROM session_leases sl LEFT JOIN replicas r ON r.id = sl.owner
		WHERE (sl.owner IS NOT NULL AND NOT (`+liveLease(2)+`)) OR (sl.owner IS NULL AND sl.handover)
		ORDER BY sl.expires_at LIMIT $1`, limit, l.staleMillis())
}

// sessions runs a query of session ids.
func (l *Leases) sessions(ctx context.Context, what, query string, args ...any) ([]string, error) {
	rows, err := l.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return ids, nil
}
