package models

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"harness/internal/session"
)

// insertChunk is the most rows per INSERT statement: 8 columns × 500 rows
// stays far below SQLite's (32766) and PostgreSQL's (65535) variable limits.
const insertChunk = 500

// eventRow is one encoded log_rows row (one event or a group).
type eventRow struct {
	seq  int64 // first seq
	n    int   // events in the row
	time int64
	typ  string
	meta string
	body []byte
	text string
}

// encodeRows encodes a part's events as rows (see encodeEvents), extending
// the session's stored group when the part continues it.
func encodeRows(sessionID string, evs []queued, tail *group, arena *rowArena) (update *eventRow, rows []eventRow, next *group, err error) {
	plain := make([]session.Event, len(evs))
	for i, q := range evs {
		plain[i] = q.ev
	}
	update, rows, next, err = encodeEventsIn(plain, tail, arena)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("session %s: %w", sessionID, err)
	}
	return update, rows, next, nil
}

// pgRewriteMax bounds the stored group a PostgreSQL commit rewrites: a
// longer one is left as it is and the batch starts a new group. An UPDATE
// writes a whole new row version (and its TOAST chunks past about 2 KB), so
// extending groups up to maxGroupBytes made every commit of a streaming
// session rewrite up to 16 KiB: at 100 sessions x 50 chunks/s that update
// was most of the commit, which every PostgreSQL subscriber waits for.
// SQLite rewrites pages in place and keeps the full groups.
const pgRewriteMax = 2 << 10

// extendable is the stored group a part may extend: tail, unless rewriting
// it costs more than this database should pay per commit.
func (t *txWriter) extendable(tail *group) *group {
	if t.pg && tail != nil && len(tail.body) > pgRewriteMax {
		return nil
	}
	return tail
}

// txWriter runs the batch transactions with raw SQL on the writer pool; it
// is used by the writer goroutine only.
type txWriter struct {
	w, r         *sql.DB
	pg           bool
	headsChannel string         // PostgreSQL: the channel announcing new heads
	insert       map[int]string // INSERT statement by row count
	args         []any          // reused argument buffer
}

func newTxWriter(db *DB) txWriter {
	return txWriter{w: db.w, r: db.r, pg: db.Driver == DriverPostgres, headsChannel: db.Channel(HeadsChannel), insert: map[int]string{}}
}

// storedHead is a session's stored head and its LogKey.
type storedHead struct {
	head, key int64
}

// heads reads the stored head and key of each session; missing sessions
// are absent from the map.
func (t *txWriter) heads(ctx context.Context, ids []string) (map[string]storedHead, error) {
	out := make(map[string]storedHead, len(ids))
	for len(ids) > 0 {
		n := min(len(ids), insertChunk)
		chunk := ids[:n]
		ids = ids[n:]
		q := "SELECT id, head, log_key FROM sessions WHERE id IN (" + placeholders(t.pg, 1, len(chunk)) + ")"
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := t.r.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			var h storedHead
			if err := rows.Scan(&id, &h.head, &h.key); err != nil {
				rows.Close()
				return nil, err
			}
			out[id] = h
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// commit writes the parts in one transaction. Each session's head moves
// only if it still equals the seq before the part (a guard against a
// concurrent delete or another writer); parts whose guard fails are marked
// stale and their rows skipped, the rest commit.
func (t *txWriter) commit(ctx context.Context, parts []*part, at time.Time) (stale []bool, err error) {
	if t.pg {
		return t.commitPG(ctx, parts, at)
	}
	tx, err := t.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	// SQLite has one process: the head moves from the seq the part
	// continues (PostgreSQL also fences by the lease epoch: commitPG).
	update := `UPDATE sessions SET head = ?, updated_at = ? WHERE id = ? AND head = ?`
	setTitle := `UPDATE sessions SET title = ? WHERE id = ?`
	setTodo := `UPDATE sessions SET todo_seq = ? WHERE id = ?`
	extendGroup := `UPDATE log_rows SET n = ?, meta = ?, body = ? WHERE log_key = ? AND seq = ? AND n < ?`
	stale = make([]bool, len(parts))
	var rows []eventRowRef
	for i, p := range parts {
		first, last := p.evs[0].ev.Seq, p.evs[len(p.evs)-1].ev.Seq
		res, err := tx.ExecContext(ctx, update, last, at, p.st.id, first-1)
		if err != nil {
			return nil, fmt.Errorf("update head of %s: %w", p.st.id, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return nil, fmt.Errorf("update head of %s: %w", p.st.id, err)
		}
		if stale[i] = n == 0; stale[i] {
			continue
		}
		if u := p.update; u != nil {
			// The stored group grows; it must still be the group the
			// writer remembers (n only ever grows).
			res, err := tx.ExecContext(ctx, extendGroup, u.n, u.meta, u.body, p.key, u.seq, u.n)
			if err != nil {
				return nil, fmt.Errorf("extend group of %s at seq %d: %w", p.st.id, u.seq, err)
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				return nil, fmt.Errorf("extend group of %s at seq %d: the stored group changed", p.st.id, u.seq)
			}
		}
		for j := range p.rows {
			rows = append(rows, eventRowRef{p.key, &p.rows[j]})
		}
		// The title column follows the log's last session/title, in the
		// same transaction, so lists never disagree with the log.
		if title, ok := lastTitle(p.evs); ok {
			if _, err := tx.ExecContext(ctx, setTitle, title, p.st.id); err != nil {
				return nil, fmt.Errorf("update title of %s: %w", p.st.id, err)
			}
		}
		if seq, ok := lastSeqOf(p.evs, session.TypeTodoWrite); ok {
			if _, err := tx.ExecContext(ctx, setTodo, seq, p.st.id); err != nil {
				return nil, fmt.Errorf("update todo list of %s: %w", p.st.id, err)
			}
		}
	}
	for len(rows) > 0 {
		n := min(len(rows), insertChunk)
		if err := t.insertRows(ctx, tx, rows[:n]); err != nil {
			return nil, err
		}
		rows = rows[n:]
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	return stale, nil
}

type eventRowRef struct {
	key int64 // the session's LogKey
	row *eventRow
}

func (t *txWriter) insertRows(ctx context.Context, tx *sql.Tx, rows []eventRowRef) error {
	q, ok := t.insert[len(rows)]
	if !ok {
		var sb strings.Builder
		sb.WriteString(`INSERT INTO log_rows (log_key, seq, n, "time", "type", meta, body, search_text) VALUES `)
		for i := range rows {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteByte('(')
			sb.WriteString(placeholders(t.pg, i*8+1, 8))
			sb.WriteByte(')')
		}
		q = sb.String()
		t.insert[len(rows)] = q
	}
	args := t.args[:0]
	for _, r := range rows {
		args = append(args, r.key, r.row.seq, r.row.n, r.row.time, r.row.typ, r.row.meta, r.row.body, r.row.text)
	}
	t.args = args[:0]
	_, err := tx.ExecContext(ctx, q, args...)
	clear(args)
	if err != nil {
		return fmt.Errorf("insert log rows: %w", err)
	}
	return nil
}

// placeholders returns n comma-separated placeholders, numbered from first
// on PostgreSQL.
func placeholders(pg bool, first, n int) string {
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		if pg {
			fmt.Fprintf(&sb, "$%d", first+i)
		} else {
			sb.WriteByte('?')
		}
	}
	return sb.String()
}

// rebind turns ? placeholders into $n on PostgreSQL. Queries passed here
// contain no literal question marks.
func rebind(pg bool, q string) string {
	if !pg {
		return q
	}
	var sb strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&sb, "$%d", n)
			continue
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

// lastSeqOf returns the seq of the last event of type typ in evs.
func lastSeqOf(evs []queued, typ session.Type) (int64, bool) {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].ev.Type == typ {
			return evs[i].ev.Seq, true
		}
	}
	return 0, false
}

// lastTitle returns the title of the last session/title event in evs.
func lastTitle(evs []queued) (string, bool) {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].ev.Type != session.TypeSessionTitle {
			continue
		}
		t, err := session.Decode[session.SessionTitle](evs[i].ev)
		if err != nil {
			return "", false
		}
		return truncateTitle(t.Title), true
	}
	return "", false
}

// truncateTitle keeps a title within the column (255 bytes, whole runes).
func truncateTitle(s string) string {
	if len(s) <= 255 {
		return s
	}
	cut := 255
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
