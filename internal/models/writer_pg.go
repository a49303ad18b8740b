package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"harness/internal/session"
)

// commitPG writes a batch on PostgreSQL in one statement, so a commit is
// one round trip (its implicit transaction): the fenced head updates
// (with the title and todo columns), the extensions of stored groups, the
// new rows and the heads' notification. Every subscriber on PostgreSQL
// waits for this commit (docs/deploy.md "Stored events only"), and six
// statements in an explicit transaction cost six round trips.
//
// A head moves only from the seq its part continues and under the lease
// epoch its appends carry (leases.go); the groups and rows of a part whose
// head did not move are left out, and the part is stale. A stored group
// must still be the one the writer remembers (n only ever grows): when one
// changed, the statement divides by zero, so it fails as a whole and stores
// nothing. The data-modifying CTEs all run; the notification, a plain CTE,
// runs because the result reads it.
func (t *txWriter) commitPG(ctx context.Context, parts []*part, at time.Time) ([]bool, error) {
	var b pgBatch
	for _, p := range parts {
		b.add(p)
	}
	rows, err := t.w.QueryContext(ctx, pgCommitSQL, append([]any{at, t.headsChannel, notifyHeadsPer}, b.args()...)...)
	if err != nil {
		return nil, pgCommitError(err)
	}
	defer rows.Close()
	moved := make(map[string]bool, len(parts))
	for rows.Next() {
		var id string
		var notified int64
		if err := rows.Scan(&id, &notified); err != nil {
			return nil, pgCommitError(err)
		}
		moved[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, pgCommitError(err)
	}
	stale := make([]bool, len(parts))
	for i, p := range parts {
		stale[i] = !moved[p.st.id]
	}
	return stale, nil
}

// notifyHeadsPer is how many "id:head" entries one notification carries:
// 36-character ids and 19-digit heads stay under notifyPayloadMax.
const notifyHeadsPer = notifyPayloadMax / 58

// pgCommitError names what failed; the guard on an extended group fails as
// a division by zero.
func pgCommitError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "22012" { // division_by_zero
		return errors.New("extend groups: a stored group changed under the writer")
	}
	return fmt.Errorf("commit: %w", err)
}

const pgCommitSQL = `
WITH v AS (
	SELECT * FROM unnest($4::text[], $5::bigint[], $6::bigint[], $7::bigint[], $8::text[], $9::bigint[])
		AS v(id, last, prev, epoch, title, todo)),
moved AS (
	UPDATE sessions s SET head = v.last, updated_at = $1,
		title = COALESCE(v.title, s.title), todo_seq = COALESCE(v.todo, s.todo_seq)
	FROM v WHERE s.id = v.id AND s.head = v.prev AND s.lease_epoch = v.epoch
	RETURNING s.id, s.log_key, s.head),
e AS (
	SELECT * FROM unnest($10::bigint[], $11::bigint[], $12::bigint[], $13::text[], $14::bytea[]) AS e(key, seq, n, meta, body)
	WHERE e.key IN (SELECT log_key FROM moved)),
ext AS (
	UPDATE log_rows l SET n = e.n, meta = e.meta, body = e.body FROM e
	WHERE l.log_key = e.key AND l.seq = e.seq AND l.n < e.n
	RETURNING 1),
guard AS (
	SELECT 1 / (CASE WHEN (SELECT count(*) FROM ext) = (SELECT count(*) FROM e) THEN 1 ELSE 0 END) AS ok),
ins AS (
	INSERT INTO log_rows (log_key, seq, n, "time", "type", meta, body, search_text)
	SELECT r.key, r.seq, r.n, r.t, r.typ, r.meta, r.body, r.txt
	FROM unnest($15::bigint[], $16::bigint[], $17::bigint[], $18::bigint[], $19::text[], $20::text[], $21::bytea[], $22::text[])
		AS r(key, seq, n, t, typ, meta, body, txt)
	WHERE r.key IN (SELECT log_key FROM moved)
	RETURNING 1),
note AS (
	SELECT count(pg_notify($2, heads)) AS sent FROM (
		SELECT string_agg(id || ':' || head, ',') AS heads
		FROM (SELECT id, head, (row_number() OVER () - 1) / $3 AS g FROM moved) h
		GROUP BY g) p)
SELECT m.id, note.sent * guard.ok FROM moved m, note, guard`

// pgBatch is a batch as the statement's arrays.
type pgBatch struct {
	ids                 []string
	lasts, prevs, epoch []int64
	titles              []*string
	todos               []*int64

	extKeys, extSeqs, extNs []int64
	extMetas                []string
	extBodies               [][]byte

	rowKeys, rowSeqs, rowNs, rowTimes []int64
	rowTypes, rowMetas, rowTexts      []string
	rowBodies                         [][]byte
}

func (b *pgBatch) add(p *part) {
	b.ids = append(b.ids, p.st.id)
	b.lasts = append(b.lasts, p.evs[len(p.evs)-1].ev.Seq)
	b.prevs = append(b.prevs, p.evs[0].ev.Seq-1)
	b.epoch = append(b.epoch, p.epoch)
	var title *string
	if s, ok := lastTitle(p.evs); ok {
		title = &s
	}
	b.titles = append(b.titles, title)
	var todo *int64
	if seq, ok := lastSeqOf(p.evs, session.TypeTodoWrite); ok {
		todo = &seq
	}
	b.todos = append(b.todos, todo)
	if u := p.update; u != nil {
		b.extKeys = append(b.extKeys, p.key)
		b.extSeqs = append(b.extSeqs, u.seq)
		b.extNs = append(b.extNs, int64(u.n))
		b.extMetas = append(b.extMetas, u.meta)
		b.extBodies = append(b.extBodies, u.body)
	}
	for i := range p.rows {
		r := &p.rows[i]
		b.rowKeys = append(b.rowKeys, p.key)
		b.rowSeqs = append(b.rowSeqs, r.seq)
		b.rowNs = append(b.rowNs, int64(r.n))
		b.rowTimes = append(b.rowTimes, r.time)
		b.rowTypes = append(b.rowTypes, r.typ)
		b.rowMetas = append(b.rowMetas, r.meta)
		b.rowBodies = append(b.rowBodies, r.body)
		b.rowTexts = append(b.rowTexts, r.text)
	}
}

// args are the statement's arrays from $4 on.
func (b *pgBatch) args() []any {
	return []any{
		b.ids, b.lasts, b.prevs, b.epoch, b.titles, b.todos,
		b.extKeys, b.extSeqs, b.extNs, b.extMetas, b.extBodies,
		b.rowKeys, b.rowSeqs, b.rowNs, b.rowTimes, b.rowTypes, b.rowMetas, b.rowBodies, b.rowTexts,
	}
}
