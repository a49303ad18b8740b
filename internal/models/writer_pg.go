package models

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// advancePG moves every part's head in one statement on PostgreSQL, fenced:
// a head moves only from the seq the part continues and under the lease
// epoch its appends carry (leases.go). Parts whose session did not move are
// stale.
func (t *txWriter) advancePG(ctx context.Context, tx *sql.Tx, parts []*part, at time.Time) ([]bool, error) {
	ids := make([]string, len(parts))
	lasts := make([]int64, len(parts))
	prevs := make([]int64, len(parts))
	epochs := make([]int64, len(parts))
	for i, p := range parts {
		ids[i], lasts[i], prevs[i], epochs[i] = p.st.id, p.evs[len(p.evs)-1].ev.Seq, p.evs[0].ev.Seq-1, p.epoch
	}
	rows, err := tx.QueryContext(ctx, `
		UPDATE sessions s SET head = v.last, updated_at = $1
		FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::bigint[]) AS v(id, last, prev, epoch)
		WHERE s.id = v.id AND s.head = v.prev AND s.lease_epoch = v.epoch
		RETURNING s.id`, at, ids, lasts, prevs, epochs)
	if err != nil {
		return nil, fmt.Errorf("update heads: %w", err)
	}
	defer rows.Close()
	moved := make(map[string]bool, len(parts))
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("update heads: %w", err)
		}
		moved[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("update heads: %w", err)
	}
	stale := make([]bool, len(parts))
	for i, p := range parts {
		stale[i] = !moved[p.st.id]
	}
	return stale, nil
}

// extensions are the stored groups a PostgreSQL commit rewrites, applied in
// one statement.
type extensions struct {
	keys, seqs []int64
	ns         []int64
	metas      []string
	bodies     [][]byte
}

func (e *extensions) add(key int64, u *eventRow) {
	e.keys = append(e.keys, key)
	e.seqs = append(e.seqs, u.seq)
	e.ns = append(e.ns, int64(u.n))
	e.metas = append(e.metas, u.meta)
	e.bodies = append(e.bodies, u.body)
}

// apply rewrites the groups; each must still be the group the writer
// remembers (n only ever grows).
func (e *extensions) apply(ctx context.Context, tx *sql.Tx) error {
	if len(e.keys) == 0 {
		return nil
	}
	res, err := tx.ExecContext(ctx, `
		UPDATE log_rows l SET n = v.n, meta = v.meta, body = v.body
		FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::bytea[]) AS v(key, seq, n, meta, body)
		WHERE l.log_key = v.key AND l.seq = v.seq AND l.n < v.n`, e.keys, e.seqs, e.ns, e.metas, e.bodies)
	if err != nil {
		return fmt.Errorf("extend groups: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != int64(len(e.keys)) {
		return fmt.Errorf("extend groups: %d of %d stored groups changed", int64(len(e.keys))-n, len(e.keys))
	}
	return nil
}
