package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestShardedRunMergesToTheSingleRun runs the e2e config as 4 shards
// against the scripted endpoint, merges them, runs the config again on the
// merged file, and compares the report and every export byte for byte with
// testdata/e2e, the single-process run's outputs that
// TestEndToEndOutputsAreStable pins.
func TestShardedRunMergesToTheSingleRun(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	srv := startScripted(t)
	dir := t.TempDir()
	vars := map[string]string{"AC3_E2E_BASE_URL": srv.URL}
	cfg := e2eConfig(t, dir, "5")
	var shards []string
	for i := 0; i < 4; i++ {
		out, err := runAppEnv(t, vars, "run", "--config", cfg, "--shard", fmt.Sprintf("%d/4", i))
		if err != nil {
			t.Fatalf("shard %d: %v\n%s", i, err, out)
		}
		if !strings.Contains(out, "no report or exports here") {
			t.Errorf("shard %d does not say it leaves the report to the merged run:\n%s", i, out)
		}
		shards = append(shards, filepath.Join(dir, fmt.Sprintf("e2e.shard-%d-of-4.db", i)))
	}
	if files := readDir(t, filepath.Join(dir, "e2e")); len(files) > 0 {
		t.Fatalf("a shard wrote %d files into run.out", len(files))
	}
	db := filepath.Join(dir, "e2e.db")
	// Shards in any order.
	args := append([]string{"merge", "--out", db}, shards[2], shards[0], shards[3], shards[1])
	out, err := runAppEnv(t, vars, args...)
	if err != nil {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	t.Log(strings.TrimSpace(out))
	calls := len(srv.Calls())
	out, err = runAppEnv(t, vars, "run", "--config", cfg)
	if err != nil {
		t.Fatalf("run on the merged file: %v\n%s", err, out)
	}
	if n := len(srv.Calls()) - calls; n != 0 {
		t.Errorf("the run on the merged file made %d model calls, want 0:\n%s", n, out)
	}
	outDir := filepath.Join(dir, "e2e")
	writeExtraExports(t, vars, db, outDir)
	want := readDir(t, filepath.Join("testdata", "e2e"))
	got := readDir(t, outDir)
	if len(want) == 0 {
		t.Fatal("no golden files in testdata/e2e")
	}
	for name, b := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("the merged run did not write %s", name)
		} else if !bytes.Equal(g, b) {
			t.Errorf("%s of the merged run differs from the single run's (%d bytes, want %d)", name, len(g), len(b))
		}
	}
}

// writeExtraExports writes the exports the e2e config does not list, as
// TestEndToEndOutputsAreStable does.
func writeExtraExports(t *testing.T, vars map[string]string, db, outDir string) {
	t.Helper()
	for _, x := range [][2]string{
		{"conversations", "parquet"}, {"conversations", "jsonl"},
		{"curated", "parquet"}, {"curated", "jsonl"}, {"curated", "sft"},
		{"annotations", "parquet"}, {"annotations", "jsonl"},
		{"quarantine", "jsonl"}, {"winners", "parquet"},
	} {
		out := filepath.Join(outDir, "extra-"+x[0]+"."+x[1])
		if o, err := runAppEnv(t, vars, "export", "--db", db, "--what", x[0], "--format", x[1], "--out", out); err != nil {
			t.Fatalf("ac3 export %s %s: %v\n%s", x[0], x[1], err, o)
		}
	}
}
