package ledger

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// Scoped reads select conversations through the origin index: none of them
// may scan a table, and none may read a conversation row to learn its
// origin (origin sits after the stored data, so that would walk the row's
// overflow pages).
func TestScopedQueriesUseIndexes(t *testing.T) {
	ctx := context.Background()
	l, err := Open(ctx, filepath.Join(t.TempDir(), "run.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	scope, args := inFilter("conv_seq", split{in: []string{"a", "b"}}, 1, 9)
	unitsQ, unitsArgs := unitsQuery("curate", []Variant{{"fc", "1;enc=o200k_base;from=2"}, {"ao", "1;enc=o200k_base;from=2"}, {"fc", "1;enc=o200k_base;from=2"}}, 512, 1024, split{all: true})
	unitsScopedQ, unitsScopedArgs := unitsQuery("curate", []Variant{{"fc", "1"}, {"ao", "1"}}, 512, 1024, split{in: []string{"a"}})
	type planCase struct {
		name  string
		query string
		args  []any
		want  []string
	}
	cases := []planCase{
		{"next seqs of an origin", `SELECT seq FROM conversations INDEXED BY conversations_by_origin WHERE origin = ? AND seq > ? ORDER BY seq LIMIT ?`, []any{"a", 1, 5},
			[]string{"SEARCH conversations USING COVERING INDEX conversations_by_origin (origin=? AND seq>?)"}},
		{"count of an origin", `SELECT count(*) FROM conversations INDEXED BY conversations_by_origin WHERE origin = ?`, []any{"a"},
			[]string{"SEARCH conversations USING COVERING INDEX conversations_by_origin (origin=?)"}},
		{"tasks of an origin", `SELECT coalesce(sum(t.status = 'done'), 0), coalesce(sum(t.status = 'failed'), 0)
			FROM conversations AS c INDEXED BY conversations_by_origin CROSS JOIN tasks AS t
			WHERE c.origin = ? AND t.stage = ? AND t.variant = ? AND t.version = ? AND t.conv_seq = c.seq`, []any{"a", "x", "y", "z"},
			[]string{"SEARCH c USING COVERING INDEX conversations_by_origin (origin=?)", "SEARCH t USING PRIMARY KEY (stage=? AND variant=? AND version=? AND conv_seq=?)"}},
		{"units of an origin", `SELECT coalesce(sum(u.status = 'done'), 0), coalesce(sum(u.status = 'failed'), 0)
			FROM conversations AS c INDEXED BY conversations_by_origin CROSS JOIN units AS u
			WHERE c.origin = ? AND u.stage = ? AND u.variant = ? AND u.version = ? AND u.conv_seq = c.seq`, []any{"a", "x", "y", "z"},
			[]string{"SEARCH c USING COVERING INDEX conversations_by_origin (origin=?)", "SEARCH u USING INDEX units_by_stage (stage=? AND variant=? AND version=? AND conv_seq=?)"}},
		{"units of a page in scope", `SELECT key, output FROM units WHERE stage = ? AND conv_seq > ? AND conv_seq <= ? AND ((variant = ? AND version = ?))` + scope + ` ORDER BY conv_seq, turn, variant`,
			append([]any{"x", 1, 9, "a", "b"}, args...),
			[]string{"USING INDEX units_by_stage", "SEARCH conversations USING COVERING INDEX conversations_by_origin (origin=? AND seq>? AND seq<?)"}},
		{"failed units in scope", `SELECT u.conversation_id, u.conv_seq, u.turn, u.error, u.reason FROM units AS u
			WHERE u.stage = ? AND u.variant = ? AND u.version = ? AND u.status = 'failed'
			AND EXISTS (SELECT 1 FROM conversations AS c INDEXED BY conversations_by_origin WHERE c.origin IN (?, ?) AND c.seq = u.conv_seq)`, []any{"x", "y", "z", "a", "b"},
			[]string{"SEARCH u USING INDEX", "SEARCH c EXISTS USING COVERING INDEX conversations_by_origin (origin=? AND seq=?"}},
	}
	// A page of units reads its own range of each variant, never the stage
	// whole.
	const unitRange = "SEARCH u USING INDEX units_by_stage (stage=? AND variant=? AND version=? AND conv_seq"
	cases = append(cases,
		planCase{"a page of units", unitsQ, unitsArgs, []string{unitRange}},
		planCase{"a page of units of an origin", unitsScopedQ, unitsScopedArgs, []string{unitRange, "conversations_by_origin"}})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows, err := l.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+c.query, c.args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, notused int
				var detail string
				if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			all := strings.Join(plan, "\n")
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("plan lacks %q:\n%s", w, all)
				}
			}
			for _, p := range plan {
				// The variants' table of constants is the one scan allowed.
				if strings.HasPrefix(p, "SCAN") && !strings.Contains(p, "CONSTANT ROWS") && p != "SCAN w" {
					t.Errorf("plan scans: %q\n%s", p, all)
				}
			}
		})
	}
}
