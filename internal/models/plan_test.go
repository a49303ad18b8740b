package models

import (
	"slices"
	"strings"
	"testing"
)

// TestBoundaryQueriesUseThePartialIndex guards the partial index: SQLite
// uses it only when a query repeats its predicate exactly. Queries that
// read the rows' bodies may instead walk the session's rows in primary-key
// order (a group row sits between boundaries, so that reads about twice the
// rows but no index); none scans the whole table.
func TestBoundaryQueriesUseThePartialIndex(t *testing.T) {
	t.Parallel()
	db := openSQLiteTest(t)
	const key = "log_key = (SELECT log_key FROM sessions WHERE id = 'x') AND "
	const index, pk = "idx_log_rows_boundaries", "USING PRIMARY KEY (log_key=?)"
	for _, tt := range []struct {
		q    string
		want []string
	}{
		{"SELECT seq, type FROM log_rows WHERE " + key + boundaryFilter + " AND seq < 10 ORDER BY seq DESC", []string{index}},
		{"SELECT type, count(*) FROM log_rows WHERE " + key + boundaryFilter + " GROUP BY type", []string{index}},
		{"SELECT body FROM log_rows WHERE " + key + boundaryFilter + " AND type = 'assistant/message'", []string{index, pk}},
		{"SELECT id FROM sessions WHERE EXISTS (SELECT 1 FROM log_rows WHERE log_rows.log_key = sessions.log_key AND " + boundaryFilter +
			" AND type IN ('user/message','assistant/message') AND search_text LIKE '%a%' ESCAPE '\\')", []string{index, pk}},
	} {
		rows, err := db.r.Query("EXPLAIN QUERY PLAN " + tt.q)
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
		p := strings.Join(plan, "; ")
		if strings.Contains(p, "SCAN log_rows") || !slices.ContainsFunc(tt.want, func(w string) bool { return strings.Contains(p, w) }) {
			t.Errorf("plan of %q uses none of %q: %s", tt.q, tt.want, p)
		}
	}
}

// TestBoundaryFilterListsBoundaryTypes: the SQL filter and the list the
// encoder keeps as rows of their own are the same types.
func TestBoundaryFilterListsBoundaryTypes(t *testing.T) {
	var quoted []string
	for _, b := range boundaryTypes {
		quoted = append(quoted, "'"+string(b)+"'")
	}
	if want := "type IN (" + strings.Join(quoted, ",") + ")"; boundaryFilter != want {
		t.Fatalf("boundaryFilter = %s, want %s", boundaryFilter, want)
	}
}
