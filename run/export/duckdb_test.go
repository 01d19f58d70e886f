package export_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/run/export"
)

// TestDuckDBReadsExports checks the Parquet exports with DuckDB, an
// independent reader: every list-valued field must be a nested column
// (messages a list of structs, refs and beat lists of strings, constraints
// lists of structs), never text, and unnesting each one, element by
// element, must give what the JSONL export of the same run holds in that
// field. It needs AC3_DUCKDB_DIR, a folder prepared by
// scripts/duckdb/install.sh (CI does this); without it the test is skipped.
func TestDuckDBReadsExports(t *testing.T) {
	dir := os.Getenv("AC3_DUCKDB_DIR")
	if dir == "" {
		t.Skip("AC3_DUCKDB_DIR not set (see scripts/duckdb/install.sh)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := judgedRun(t)
	// The scripts run from the folder, where node finds DuckDB; copied
	// afresh so a folder installed earlier runs these ones.
	scripts := map[string]string{}
	for _, name := range []string{"read.mjs", "query.mjs"} {
		src, err := os.ReadFile(filepath.Join("..", "..", "scripts", "duckdb", name))
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.CreateTemp(dir, strings.TrimSuffix(name, ".mjs")+"-*.mjs")
		if err != nil {
			t.Fatal(err)
		}
		defer os.Remove(f.Name())
		if _, err := f.Write(src); err != nil {
			t.Fatal(err)
		}
		f.Close()
		scripts[name] = f.Name()
	}
	node := func(script string, args ...string) []byte {
		t.Helper()
		cmd := exec.CommandContext(ctx, "node", append([]string{script}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("duckdb: %v\n%s", err, out)
		}
		return out
	}

	const (
		strs = `VARCHAR[]`
		msgs = `STRUCT("role" VARCHAR, "content" VARCHAR)[]`
		cons = `STRUCT("text" VARCHAR, evidence VARCHAR, "type" VARCHAR, turn BIGINT)[]`
	)
	exports := []struct {
		what  string
		rows  int
		lists map[string]string // list column → the type DuckDB must read
		text  []string          // columns that are text, not lists
	}{
		{export.KindConversations, 3, map[string]string{"messages": msgs}, []string{"meta"}},
		{export.KindCurated, 10, map[string]string{"messages": msgs, "origins": strs}, nil},
		{export.KindAnnotations, 8, map[string]string{"refs": strs, "constraints_new": cons, "constraints_registry": cons, "pollution_sources": strs}, nil},
		{export.KindPreferences, 6, map[string]string{"prompt": msgs, "chosen": msgs, "rejected": msgs}, nil},
		{export.KindWinners, 4, map[string]string{"messages": msgs, "beat": strs}, nil},
	}
	var files []string
	var queries []string
	type check struct {
		file, column string
		want         []map[string]string
	}
	var checks []check
	for _, x := range exports {
		pq, st := write(t, l, x.what, export.Parquet, x.what+".parquet", export.Options{})
		js, _ := write(t, l, x.what, export.JSONL, x.what+".jsonl", export.Options{})
		if st.Rows != int64(x.rows) {
			t.Fatalf("%s: %d rows, want %d", x.what, st.Rows, x.rows)
		}
		files = append(files, pq)
		lines := readLines(t, js)
		for _, col := range slices.Sorted(maps.Keys(x.lists)) {
			// One output row per element: the row it is in, its place,
			// and its value (a struct's fields as columns).
			v := " AS v"
			if strings.HasPrefix(x.lists[col], "STRUCT") {
				v = ""
			}
			q := fmt.Sprintf(`SELECT file_row_number AS r, generate_subscripts(%q, 1) AS i, unnest(%q, recursive := true)%s FROM read_parquet('%s', file_row_number = true) ORDER BY r, i`,
				col, col, v, strings.ReplaceAll(pq, "'", "''"))
			queries = append(queries, q)
			checks = append(checks, check{pq, col, elements(t, lines, col)})
		}
	}

	// Types and row counts.
	sc := bufio.NewScanner(bytes.NewReader(node(scripts["read.mjs"], files...)))
	seen := 0
	for sc.Scan() {
		var r struct {
			File    string
			Rows    int
			Columns map[string]string
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("duckdb output %q: %v", sc.Text(), err)
		}
		x := exports[slices.Index(files, r.File)]
		seen++
		if r.Rows != x.rows {
			t.Errorf("%s: duckdb read %d rows, want %d", x.what, r.Rows, x.rows)
		}
		for col, typ := range x.lists {
			if got := r.Columns[col]; got != typ {
				t.Errorf("%s: %s read as %q, want %q", x.what, col, got, typ)
			}
		}
		for _, col := range x.text {
			if got := r.Columns[col]; got != "VARCHAR" {
				t.Errorf("%s: %s read as %q, want VARCHAR", x.what, col, got)
			}
		}
		// No list is left as text: a column holding JSON arrays would read
		// as VARCHAR with a name of a list field.
		for col, typ := range r.Columns {
			if _, isList := x.lists[col]; !isList && strings.HasSuffix(typ, "[]") {
				t.Errorf("%s: %s is a list (%s) the test does not check", x.what, col, typ)
			}
		}
	}
	if seen != len(files) {
		t.Fatalf("duckdb described %d files, want %d", seen, len(files))
	}

	// Every list column, unnested.
	sc = bufio.NewScanner(bytes.NewReader(node(scripts["query.mjs"], queries...)))
	sc.Buffer(nil, 1<<24)
	k := 0
	for ; sc.Scan(); k++ {
		var r struct {
			SQL   string
			Rows  []map[string]any
			Error string
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("duckdb output %q: %v", sc.Text(), err)
		}
		c := checks[k]
		if r.Error != "" {
			t.Errorf("%s %s: %s", filepath.Base(c.file), c.column, r.Error)
			continue
		}
		got := make([]map[string]string, len(r.Rows))
		for i, row := range r.Rows {
			got[i] = stringsOf(row)
		}
		if len(c.want) == 0 {
			t.Errorf("%s %s: the JSONL export has no elements to compare", filepath.Base(c.file), c.column)
		}
		if !slices.EqualFunc(got, c.want, func(a, b map[string]string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
			t.Errorf("%s %s, unnested by DuckDB:\n%v\nthe JSONL export holds:\n%v", filepath.Base(c.file), c.column, got, c.want)
		}
	}
	if k != len(checks) {
		t.Fatalf("duckdb answered %d queries, want %d", k, len(checks))
	}
}

// elements is what unnesting column col of lines gives: per element, its
// row (0-based), its place (1-based) and its value, or its fields when it
// is an object; every value as DuckDB's JSON rows print it, a string.
func elements(t *testing.T, lines []map[string]any, col string) []map[string]string {
	t.Helper()
	var out []map[string]string
	for r, line := range lines {
		v, ok := line[col]
		if !ok {
			t.Fatalf("the JSONL export has no %s", col)
		}
		if v == nil {
			continue
		}
		list, ok := v.([]any)
		if !ok {
			t.Fatalf("%s in JSONL is %T, want an array", col, v)
		}
		for i, e := range list {
			m := map[string]any{"r": r, "i": i + 1}
			if obj, ok := e.(map[string]any); ok {
				for k, x := range obj {
					m[k] = x
				}
			} else {
				m["v"] = e
			}
			out = append(out, stringsOf(m))
		}
	}
	return out
}

func stringsOf(m map[string]any) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			out[k] = "<null>"
		case string:
			out[k] = v
		default:
			out[k] = fmt.Sprint(v)
		}
	}
	return out
}
