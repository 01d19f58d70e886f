package ledger

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// The progress queries must be answered from indexes, never by reading
// every unit row (outputs included) of a run with millions of units.
func TestProgressQueriesUseIndexes(t *testing.T) {
	ctx := context.Background()
	l, err := Open(ctx, filepath.Join(t.TempDir(), "run.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cases := []struct {
		query string
		want  string
	}{
		{`SELECT coalesce(sum(status = 'done'), 0), coalesce(sum(status = 'failed'), 0) FROM units WHERE stage = 'a' AND variant = 'b' AND version = 'c'`,
			"USING COVERING INDEX units_by_status"},
		{`SELECT reason, count(*), min(conv_seq * 1048576 + turn) FROM units WHERE stage = 'a' AND variant = 'b' AND version = 'c' AND status = 'failed' GROUP BY reason`,
			"USING COVERING INDEX units_failed"},
		{`SELECT coalesce(sum(status = 'done'), 0), coalesce(sum(status = 'failed'), 0) FROM tasks WHERE stage = 'a' AND variant = 'b' AND version = 'c'`,
			"USING PRIMARY KEY"},
		// taskStates: a range of the key, never every task of the stage.
		{`SELECT conv_seq, status FROM tasks WHERE stage = 'a' AND variant = 'b' AND version = 'c' AND conv_seq > 1 AND conv_seq <= 2`,
			"USING PRIMARY KEY (stage=? AND variant=? AND version=? AND conv_seq>? AND conv_seq<?)"},
	}
	for _, c := range cases {
		rows, err := l.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+c.query)
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
		if p := strings.Join(plan, "; "); !strings.Contains(p, c.want) {
			t.Errorf("plan of %s\n= %s\nwant %s", c.query, p, c.want)
		}
	}
}
