package models

import (
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
