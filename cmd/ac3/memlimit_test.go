package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/memgov"
)

// Writers and readers get their default limits, a limit on the command
// line holds for every command, and GOMEMLIMIT wins over both.
func TestMemoryLimitApplied(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "run.db")
	mustRun(t, "ingest", "--db", db, repoPath("fixtures", "wildchat", "wildchat-1m-sample10.jsonl"))
	for _, tc := range []struct {
		name string
		vars map[string]string
		args []string
		want []int64
	}{
		{"export default", nil, []string{"export", "--db", db, "--what", "conversations", "--format", "jsonl", "--out", filepath.Join(dir, "c.jsonl")}, []int64{memgov.Writers, memgov.Readers}},
		{"status default", nil, []string{"status", "--db", db}, []int64{memgov.Writers, memgov.Readers}},
		{"flag", nil, []string{"--memory-limit", "1GiB", "status", "--db", db}, []int64{1 << 30}},
		{"off", nil, []string{"--memory-limit", "off", "status", "--db", db}, nil},
		{"ingest default", nil, []string{"ingest", "--db", db, repoPath("fixtures", "wildchat", "wildchat-1m-sample10.jsonl")}, []int64{memgov.Writers, memgov.Ingest}},
		{"convert default", nil, []string{"convert", "--out", filepath.Join(dir, "c.parquet"), repoPath("fixtures", "wildchat", "wildchat-1m-sample10.jsonl")}, []int64{memgov.Writers, memgov.Convert}},
		{"writer default", nil, []string{"curate", "--db", db, "--strategies", "fc"}, []int64{memgov.Writers}},
		{"writer with flag", nil, []string{"--memory-limit", "2GiB", "curate", "--db", db, "--strategies", "fc"}, []int64{2 << 30}},
		{"ingest with flag", nil, []string{"--memory-limit", "300MiB", "ingest", "--db", db, repoPath("fixtures", "wildchat", "wildchat-1m-sample10.jsonl")}, []int64{300 << 20}},
		{"GOMEMLIMIT wins", map[string]string{"GOMEMLIMIT": "1GiB"}, []string{"--memory-limit", "2GiB", "status", "--db", db}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int64
			var out bytes.Buffer
			e := &env{stop: make(chan struct{}), stdout: &out, stderr: &out,
				getenv:         func(k string) string { return tc.vars[k] },
				setMemoryLimit: func(n int64) { got = append(got, n) }}
			ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
			defer cancel()
			if err := newApp(e).RunContext(ctx, append([]string{"ac3"}, tc.args...)); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("limits set %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("limits set %v, want %v", got, tc.want)
				}
			}
		})
	}
	out, _, err := runApp(t, "--memory-limit", "lots", "status", "--db", db)
	if err == nil || !strings.Contains(err.Error(), "--memory-limit") {
		t.Fatalf("a bad --memory-limit gave %v (%s), want an error naming the flag", err, out)
	}
}
