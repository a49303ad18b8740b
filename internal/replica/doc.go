// Package replica lets replicas on one PostgreSQL database serve every
// session, whichever replica owns it (docs/deploy.md "Replicas on
// PostgreSQL"):
//
//   - Mirrors: a replica with subscribers to a session owned elsewhere keeps
//     a read-only copy of its log, fed from the events table whenever the
//     batched writer's commit announces a new head (LISTEN/NOTIFY on
//     models.HeadsChannel), so its subscribers get every event in order,
//     without gap or duplicate.
//   - Live notifications (status, queue, approvals and questions) of this
//     replica's agents go out on LiveChannel; other replicas hand them to
//     their hub and keep their mirrors' state with them.
//   - Takeovers: orphaned leases (their holder stopped renewing) are taken
//     every TTL/8; a lease a draining replica handed over (its queue
//     waits) is taken at once, on its notice on models.LeaseChannel; at
//     start, the leases that still name this replica's id (a dead
//     process of the same id held them) are taken back.
//   - Requests between replicas (a command forwarded to the owner, a
//     mirror asking the owner for its live state) are HTTP requests to the
//     owner's advertised address, signed with a key derived from the
//     shared secret key (sign.go).
package replica
