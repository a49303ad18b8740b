package main

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"syscall"
	"time"
)

// Killing the owner (-kill-owner): replica 0 creates, and so owns, every
// session; after the given time under load it is SIGKILLed. The viewers
// and senders use the other replicas only, so what they see is what a
// client of a survivor sees: the refusals of its sends (each retried with
// the same key) and, per session, the time from the kill until another
// replica holds the session's lease (the lease table, polled every 20 ms).

type takeoverFigures struct {
	Sessions int     `json:"sessions"`
	Moved    int     `json:"moved"`
	P50Ms    float64 `json:"p50Ms"`
	P100Ms   float64 `json:"p100Ms"`
	// Refusals are the sends the survivors refused during the load (each
	// retried with the same key until stored).
	Refusals int `json:"refusals"`
}

// killOwner SIGKILLs the owner after d and measures each session's
// takeover; it returns when every session moved or after a minute.
func killOwner(ctx context.Context, owner *spawned, dsn, ownerID string, ids []string, d time.Duration) (takeoverFigures, error) {
	out := takeoverFigures{Sessions: len(ids)}
	select {
	case <-ctx.Done():
		return out, ctx.Err()
	case <-time.After(d):
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return out, err
	}
	defer db.Close()
	if err := owner.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return out, fmt.Errorf("kill the owner: %w", err)
	}
	killed := time.Now()
	seen := map[string]time.Duration{}
	deadline := killed.Add(time.Minute)
	for len(seen) < len(ids) && time.Now().Before(deadline) && ctx.Err() == nil {
		rows, err := db.QueryContext(ctx, `SELECT session_id FROM session_leases WHERE session_id = ANY($1::text[]) AND owner IS NOT NULL AND owner <> $2 AND expires_at > now()`, ids, ownerID)
		if err != nil {
			return out, fmt.Errorf("poll the leases: %w", err)
		}
		at := time.Since(killed)
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return out, err
			}
			if _, ok := seen[id]; !ok {
				seen[id] = at
			}
		}
		rows.Close()
		time.Sleep(20 * time.Millisecond)
	}
	took := make([]time.Duration, 0, len(seen))
	for _, t := range seen {
		took = append(took, t)
	}
	slices.Sort(took)
	out.Moved = len(took)
	if len(took) > 0 {
		out.P50Ms = ms(took[(len(took)-1)/2])
		out.P100Ms = ms(took[len(took)-1])
	}
	return out, nil
}
