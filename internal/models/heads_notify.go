package models

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// HeadsChannel is the PostgreSQL notification channel on which every
// commit of the batched writer announces the sessions' new heads, so the
// replicas following a session owned elsewhere read the new events from
// the events table (docs/deploy.md). The payload is "id:head" pairs
// separated by commas. The notification is sent in the committing
// transaction: it is delivered at the commit, and only if it commits.
const HeadsChannel = "harness_heads"

// DeletedHead is the head HeadsChannel announces for a deleted session.
const DeletedHead = -1

// notifyPayloadMax stays under PostgreSQL's 8000-byte payload limit.
const notifyPayloadMax = 7800

// notifyHeads sends the heads of the committed parts on HeadsChannel, in as
// few notifications as the payload limit allows.
func notifyHeads(ctx context.Context, tx *sql.Tx, channel string, parts []*part, stale []bool) error {
	var b strings.Builder
	send := func() error {
		if b.Len() == 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, channel, b.String()); err != nil {
			return fmt.Errorf("notify heads: %w", err)
		}
		b.Reset()
		return nil
	}
	for i, p := range parts {
		if stale[i] {
			continue
		}
		entry := p.st.id + ":" + strconv.FormatInt(p.evs[len(p.evs)-1].ev.Seq, 10)
		if b.Len()+len(entry)+1 > notifyPayloadMax {
			if err := send(); err != nil {
				return err
			}
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(entry)
	}
	return send()
}

// ParseHeads reads a HeadsChannel payload: session id → head.
func ParseHeads(payload string) map[string]int64 {
	heads := map[string]int64{}
	for _, entry := range strings.Split(payload, ",") {
		id, seq, ok := strings.Cut(entry, ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(seq, 10, 64)
		if err != nil {
			continue
		}
		if old, seen := heads[id]; seen && (old == DeletedHead || n < old) {
			continue
		}
		heads[id] = n
	}
	return heads
}
