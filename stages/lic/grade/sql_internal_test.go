package grade

import (
	"context"
	"strings"
	"testing"
	"time"
)

func rs(rows ...[]any) resultSet {
	out := resultSet{}
	for _, r := range rows {
		out.cols = len(r)
		keys := make([]string, len(r))
		for i, v := range r {
			keys[i] = cellKey(v)
		}
		out.rows = append(out.rows, keys)
	}
	return out
}

func row(v ...any) []any { return v }

func TestSameResult(t *testing.T) {
	tests := []struct {
		name     string
		ref, got resultSet
		ordered  bool
		want     bool
	}{
		{"both empty", rs(), rs(), false, true},
		{"empty against rows", rs(), rs(row(int64(1))), false, false},
		{"same rows other order", rs(row(int64(1)), row(int64(2))), rs(row(int64(2)), row(int64(1))), false, true},
		{"other order counts when ordered", rs(row(int64(1)), row(int64(2))), rs(row(int64(2)), row(int64(1))), true, false},
		{"columns swapped", rs(row("a", int64(1)), row("b", int64(2))), rs(row(int64(1), "a"), row(int64(2), "b")), false, true},
		{"columns swapped, ordered", rs(row("a", int64(1)), row("b", int64(2))), rs(row(int64(1), "a"), row(int64(2), "b")), true, true},
		{"swapped columns must keep rows together", rs(row("a", int64(1)), row("b", int64(2))), rs(row(int64(2), "a"), row(int64(1), "b")), false, false},
		{"multiset, not set", rs(row(int64(1)), row(int64(1)), row(int64(2))), rs(row(int64(1)), row(int64(2)), row(int64(2))), false, false},
		{"int equals integral float", rs(row(int64(3))), rs(row(3.0)), false, true},
		{"text is not a number", rs(row(int64(3))), rs(row("3")), false, false},
		{"float rounding absorbed", rs(row(2.0 / 3)), rs(row(0.6666666666667)), false, true},
		{"null is itself", rs(row(nil)), rs(row(nil)), false, true},
		{"null is not zero", rs(row(nil)), rs(row(int64(0))), false, false},
		{"date as time and as text", rs(row(time.Date(2018, 3, 1, 0, 0, 0, 0, time.UTC))), rs(row("2018-03-01")), false, true},
		{"row count differs", rs(row(int64(1))), rs(row(int64(1)), row(int64(1))), false, false},
		{"column count differs", rs(row(int64(1))), rs(row(int64(1), int64(1))), false, false},
		{"identical columns permuted", rs(row(int64(1), int64(1), int64(2)), row(int64(1), int64(1), int64(3))), rs(row(int64(2), int64(1), int64(1)), row(int64(3), int64(1), int64(1))), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := sameResult(tt.ref, tt.got, tt.ordered)
			if got != tt.want {
				t.Errorf("sameResult = %v (%s); want %v", got, why, tt.want)
			}
			if !got && why == "" {
				t.Error("a mismatch without a reason")
			}
		})
	}
}

func TestPrepareQuery(t *testing.T) {
	tests := []struct {
		in, want, reason string
	}{
		{"SELECT DISTINCT a FROM t;", "SELECT  a FROM t", ""},
		{"select count( distinct a) from t where b > = 3", "select count(  a) from t where b >= 3", ""},
		{"SELECT 'distinct' FROM t", "SELECT 'distinct' FROM t", ""},
		{"  (SELECT 1) UNION (SELECT 2) ", "(SELECT 1) UNION (SELECT 2)", ""},
		{"WITH a AS (SELECT 1) SELECT * FROM a", "WITH a AS (SELECT 1) SELECT * FROM a", ""},
		{"-- only a comment", "", "the query is empty"},
		{"SELECT 1; SELECT 2", "", "the answer holds several SQL statements, not one query"},
		{"UPDATE t SET a = 1", "", "the statement is not a query (it starts with UPDATE)"},
		{"SELECT name FROM p WHERE YEAR ( CURDATE() ) - born > 30", "SELECT name FROM p WHERE 2020 - born > 30", ""},
	}
	for _, tt := range tests {
		got, reason := prepareQuery(tt.in, false)
		if got != tt.want || reason != tt.reason {
			t.Errorf("prepareQuery(%q) = %q, %q; want %q, %q", tt.in, got, reason, tt.want, tt.reason)
		}
	}
}

func TestQueryLiterals(t *testing.T) {
	idents := map[string]bool{"t1": true, "written_by": true, "name": true, "age": true, "tv_channel": true}
	got := queryLiterals(`SELECT name FROM tv_channel AS T1 WHERE T1.written_by = 'Todd Casey' AND age BETWEEN 3 AND -5 AND name LIKE "%al%" AND "name" != 'x' LIMIT 7`, idents)
	want := []sqlLiteral{
		{str: true, value: "Todd Casey", column: "written_by"},
		{value: "3", column: "age"},
		{value: "-5", column: "age"},
		{str: true, value: "%al%", column: "name", like: true},
		{str: true, value: "x", column: "name"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("literal %d = %+v; want %+v", i, got[i], want[i])
		}
	}
}

func TestPlugCandidates(t *testing.T) {
	got := plugCandidates("SELECT a FROM t WHERE b = 'M' AND c = 2", "SELECT a FROM t WHERE b = 'F' AND c = 2", nil, 100)
	want := []string{
		"SELECT a FROM t WHERE b = 'F' AND c = 'F'",
		"SELECT a FROM t WHERE b = 'F' AND c = 2",
		"SELECT a FROM t WHERE b = 2 AND c = 'F'",
		"SELECT a FROM t WHERE b = 2 AND c = 2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("plugCandidates =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := len(plugCandidates("SELECT 1, 2, 3, 4, 5, 6, 7", "SELECT 'a', 'b', 'c'", nil, 100)); n != 100 {
		t.Errorf("%d candidates; want the cap of 100", n)
	}
	if plugCandidates("SELECT a FROM t", "SELECT a FROM t WHERE b = 1", nil, 100) != nil {
		t.Error("a query without value slots got candidates")
	}
}

func TestDDLFromSchemaTables(t *testing.T) {
	// A column name SQLite rejects unquoted, and a declared type trying to
	// smuggle in a statement.
	ddl, err := ddlFromSchemaTables([]byte(`{"T": {"columns": [[0, "id", "INTEGER", 1, null, 1], [1, "18_49", "TEXT); DROP TABLE x; --", 0, null, 0]], "primary_keys": ["id"], "foreign_keys": [[0, 0, "P", "18_49", "k", "NO ACTION"]]}, "P": {"columns": [[0, "k", "TEXT", 0, null, 1]], "primary_keys": ["k"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(ddl, ";") != 2 || strings.Contains(ddl, "--") {
		t.Errorf("a declared type smuggled SQL through: %q", ddl)
	}
	if err := tryDDL(context.Background(), ddl); err != nil {
		t.Errorf("the DDL does not run: %v\n%s", err, ddl)
	}
	if _, err := ddlFromSchemaTables([]byte(`{"T": {"columns": [[0]]}}`)); err == nil {
		t.Error("a malformed column was accepted")
	}
}

func FuzzTokenizeSQL(f *testing.F) {
	for _, s := range []string{"SELECT 'a''b', \"c\" FROM [t] WHERE x >= 1.5e3 -- c\n/* d */", "`q", "'open", "/* open", "$a :b @c ?1", "ünïcode = 'ß'"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		toks := tokenizeSQL(s)
		if joinTokens(toks) != s {
			t.Fatalf("tokens do not give back the input")
		}
		for _, tk := range toks {
			if tk.text == "" {
				t.Fatal("an empty token")
			}
		}
		q, reason := prepareQuery(s, false)
		if q == "" && reason == "" {
			t.Fatal("no query and no reason")
		}
		_ = queryLiterals(s, map[string]bool{"a": true})
		_ = plugCandidates(s, s, nil, 10)
		_ = hasOrderBy(s)
	})
}
