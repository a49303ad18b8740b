package models

import (
	"strings"
	"testing"
)

// TestBoundaryQueriesUseThePartialIndex guards the partial index: SQLite
// uses it only when a query repeats its predicate exactly.
func TestBoundaryQueriesUseThePartialIndex(t *testing.T) {
	t.Parallel()
	db := openSQLiteTest(t)
	for _, q := range []string{
		"SELECT seq, type FROM events WHERE session_id = 'x' AND " + boundaryFilter + " AND seq < 10 ORDER BY seq DESC",
		"SELECT type, count(*) FROM events WHERE session_id = 'x' AND " + boundaryFilter + " GROUP BY type",
		"SELECT body FROM events WHERE session_id = 'x' AND " + boundaryFilter + " AND type = 'assistant/message'",
		"SELECT id FROM sessions WHERE EXISTS (SELECT 1 FROM events WHERE events.session_id = sessions.id AND " + boundaryFilter +
			" AND type IN ('user/message','assistant/message') AND search_text LIKE '%a%' ESCAPE '\\')",
	} {
		rows, err := db.r.Query("EXPLAIN QUERY PLAN " + q)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if p := strings.Join(plan, "; "); !strings.Contains(p, "idx_events_boundaries") {
			t.Errorf("plan of %q does not use the boundary index: %s", q, p)
		}
	}
}
