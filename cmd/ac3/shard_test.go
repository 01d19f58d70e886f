package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/shard"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/run/export"
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

// writeExtraExports writes the exports the e2e config does not list (the
// golden test and the shard test compare them).
func writeExtraExports(t *testing.T, vars map[string]string, db, outDir string) {
	t.Helper()
	for _, x := range [][2]string{
		{"conversations", "parquet"}, {"conversations", "jsonl"},
		{"curated", "parquet"}, {"curated", "jsonl"}, {"curated", "sft"},
		{"annotations", "parquet"}, {"annotations", "jsonl"},
		{"quarantine", "jsonl"}, {"winners", "parquet"},
	} {
		out := filepath.Join(outDir, "extra-"+export.FileName(x[0], x[1]))
		if o, err := runAppEnv(t, vars, "export", "--db", db, "--what", x[0], "--format", x[1], "--out", out); err != nil {
			t.Fatalf("ac3 export %s %s: %v\n%s", x[0], x[1], err, o)
		}
	}
}

// TestMergeRefuses checks every refusal of merge: one clear line, a
// non-zero exit, and nothing at --out.
func TestMergeRefuses(t *testing.T) {
	dir := t.TempDir()
	input := "../../fixtures/wildchat/wildchat-1m-sample10.jsonl"
	ingest := func(db string, args ...string) string {
		t.Helper()
		if out, err := runAppEnv(t, nil, append(append([]string{"ingest", "--db", filepath.Join(dir, db)}, args...), input)...); err != nil {
			t.Fatalf("ingest %s %v: %v\n%s", db, args, err, out)
		}
		if len(args) > 1 && args[0] == "--shard" {
			i, n, _ := strings.Cut(args[1], "/")
			return filepath.Join(dir, strings.TrimSuffix(db, ".db")+".shard-"+i+"-of-"+n+".db")
		}
		return filepath.Join(dir, db)
	}
	a0 := ingest("a.db", "--shard", "0/2")
	b1 := ingest("b.db", "--shard", "1/3")
	c0 := ingest("c.db", "--shard", "0/2")
	c1 := ingest("c.db", "--shard", "1/2", "--min-turns", "3")
	d0 := ingest("d.db", "--shard", "0/2")
	d1 := ingest("d.db", "--shard", "1/2")
	whole := ingest("whole.db")
	// A shard whose classify stage ran with another version than a0's.
	e0 := ingest("e.db", "--shard", "0/2")
	e1 := ingest("e.db", "--shard", "1/2")
	for _, x := range [][2]string{{"a.db", "0/2"}, {"e.db", "0/2"}, {"e.db", "1/2"}} {
		if out, err := runAppEnv(t, nil, "annotate", "--db", filepath.Join(dir, x[0]), "--shard", x[1], "--stages", "classify"); err != nil {
			t.Fatalf("annotate %s: %v\n%s", x, err, out)
		}
	}
	tamper(t, e1, `UPDATE tasks SET version = version || '-older-prompt'`)
	damaged := filepath.Join(dir, "damaged.db")
	if err := os.WriteFile(damaged, bytes.Repeat([]byte("not a database "), 512), 0o644); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(dir, "existing.db")
	if err := os.WriteFile(existing, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		out    string
		shards []string
		want   string
	}{
		{"missing shard", "", []string{a0}, "missing shard 1/2"},
		{"repeated shard", "", []string{a0, a0}, "are both shard 0/2"},
		{"other shard count", "", []string{a0, b1}, "split differently"},
		{"other settings", "", []string{c0, c1}, "different settings"},
		{"other stage version", "", []string{e0, e1}, "different prompt or stage versions"},
		{"step not run everywhere", "", []string{a0, d1}, "shard 0 ran step annotate but shard 1 did not"},
		{"not a shard", "", []string{a0, whole}, "not a shard's run file"},
		{"damaged", "", []string{a0, damaged}, "damaged"},
		{"out exists", existing, []string{d0, d1}, "exists; pass --force"},
		{"no such file", "", []string{a0, filepath.Join(dir, "nope.db")}, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.out
			if out == "" {
				out = filepath.Join(dir, "merged-"+strings.ReplaceAll(tc.name, " ", "-")+".db")
			}
			before, _ := os.ReadFile(out)
			msg, err := runAppEnv(t, nil, append([]string{"merge", "--out", out}, tc.shards...)...)
			if err == nil {
				t.Fatalf("merge succeeded:\n%s", msg)
			}
			if run.ExitCode(err) == 0 {
				t.Error("exit status 0")
			}
			line := run.ErrorLine(err)
			if !strings.Contains(line, tc.want) || strings.Contains(line, "\n") {
				t.Errorf("error %q, want one line with %q", line, tc.want)
			}
			after, _ := os.ReadFile(out)
			if !bytes.Equal(before, after) {
				t.Errorf("%s changed", out)
			}
			ents, _ := filepath.Glob(out + "*")
			if tc.out == "" && len(ents) > 0 {
				t.Errorf("merge left %v", ents)
			}
		})
	}
	// A shard still being written is not merged half done.
	l, err := ledger.Open(context.Background(), d1, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = runAppEnv(t, nil, "merge", "--out", filepath.Join(dir, "while-written.db"), d0, d1)
	l.Close()
	if run.ExitCode(err) != run.ExitLocked {
		t.Errorf("merging a shard being written: exit %d (%v), want %d", run.ExitCode(err), err, run.ExitLocked)
	}
	// The refused --out is replaced with --force.
	if msg, err := runAppEnv(t, nil, "merge", "--force", "--out", existing, d0, d1); err != nil {
		t.Fatalf("merge --force: %v\n%s", err, msg)
	}
	if msg, err := runAppEnv(t, nil, "status", "--db", existing); err != nil {
		t.Fatalf("status of the merged run: %v\n%s", err, msg)
	} else if !strings.Contains(msg, "merged from 2 shards") {
		t.Errorf("status of the merged run does not say it was merged:\n%s", msg)
	}
}

// TestShardFileKeepsItsShard: a shard's run file is never continued as a
// whole run, and a whole run never as a shard.
func TestShardFileKeepsItsShard(t *testing.T) {
	dir := t.TempDir()
	input := "../../fixtures/wildchat/wildchat-1m-sample10.jsonl"
	if out, err := runAppEnv(t, nil, "ingest", "--db", filepath.Join(dir, "r.db"), "--shard", "0/2", input); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	_, err := runAppEnv(t, nil, "ingest", "--db", filepath.Join(dir, "r.shard-0-of-2.db"), input)
	if err == nil || !strings.Contains(err.Error(), "is shard 0/2 of a sharded run: pass --shard 0/2") {
		t.Errorf("continuing a shard as a whole run: %v", err)
	}
	_, err = runAppEnv(t, map[string]string{"AC3_SHARD": "1/2"}, "ingest", "--db", filepath.Join(dir, "r.db"), "--shard", "0/2", input)
	if err == nil || !strings.Contains(err.Error(), "conflicting shards") {
		t.Errorf("--shard and AC3_SHARD differ: %v", err)
	}
	_, err = runAppEnv(t, map[string]string{"JOB_COMPLETION_INDEX": "1"}, "ingest", "--db", filepath.Join(dir, "r.db"), "--shards", "2", input)
	if err != nil {
		t.Errorf("--shards 2 with JOB_COMPLETION_INDEX=1: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "r.shard-1-of-2.db")); err != nil {
		t.Errorf("--shards 2 with JOB_COMPLETION_INDEX=1 did not write shard 1's file: %v", err)
	}
	msg, err := runAppEnv(t, nil, "status", "--db", filepath.Join(dir, "r.shard-1-of-2.db"))
	if err != nil || !strings.Contains(msg, "shard 1/2 (") {
		t.Errorf("status of shard 1 does not name it (%v):\n%s", err, msg)
	}
	msg, err = runAppEnv(t, nil, "status", "--json", "--db", filepath.Join(dir, "r.shard-1-of-2.db"))
	if err != nil || !strings.Contains(msg, `"shard": {`) {
		t.Errorf("status --json of shard 1 has no shard (%v):\n%s", err, msg)
	}
}

// tamper changes a run file behind the ledger's back.
func tamper(t *testing.T, path, stmt string) {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatal(err)
	}
}

// TestMergeDropsDuplicatesAcrossShards: with dedupe, a shard cannot see a
// duplicate whose first copy another shard owns; the merge drops the later
// copy as one process would have, so the merged run's conversations,
// curated contexts and drop counts are the single run's.
func TestMergeDropsDuplicatesAcrossShards(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile("../../fixtures/wildchat/wildchat-1m-sample10.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	// copyAs is line i under a new id owned by the other of 2 shards (or
	// the same one), so only its content repeats.
	copyAs := func(i int, sameShard bool) string {
		var rec map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &rec); err != nil {
			t.Fatal(err)
		}
		orig := rec["conversation_hash"].(string)
		for k := 0; ; k++ {
			id := fmt.Sprintf("copy-%d-%s", k, orig)
			if (shard.Of(id, 2) == shard.Of(orig, 2)) == sameShard {
				rec["conversation_hash"] = id
				b, err := json.Marshal(rec)
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
		}
	}
	// A copy before its original (the original is the one dropped), two
	// after theirs, one of them in the same shard.
	input := append([]string{copyAs(5, false)}, lines...)
	input = append(input, copyAs(0, false), copyAs(2, true))
	in := filepath.Join(dir, "dups.jsonl")
	if err := os.WriteFile(in, []byte(strings.Join(input, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := runAppEnv(t, nil, args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
	single, merged := filepath.Join(dir, "single.db"), filepath.Join(dir, "merged.db")
	must("ingest", "--db", single, "--dedupe", in)
	must("curate", "--db", single, "--strategies", "fc,ao")
	for i := 0; i < 2; i++ {
		s := fmt.Sprintf("%d/2", i)
		must("ingest", "--db", filepath.Join(dir, "sharded.db"), "--shard", s, "--dedupe", in)
		must("curate", "--db", filepath.Join(dir, "sharded.db"), "--shard", s, "--strategies", "fc,ao")
	}
	must("merge", "--out", merged, filepath.Join(dir, "sharded.shard-0-of-2.db"), filepath.Join(dir, "sharded.shard-1-of-2.db"))
	for _, x := range [][2]string{{"conversations", "jsonl"}, {"curated", "jsonl"}, {"curated", "parquet"}} {
		var files [2][]byte
		for j, db := range []string{single, merged} {
			out := filepath.Join(dir, fmt.Sprintf("%d-%s.%s", j, x[0], x[1]))
			must("export", "--db", db, "--what", x[0], "--format", x[1], "--out", out)
			if files[j], err = os.ReadFile(out); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(files[0], files[1]) {
			t.Errorf("%s %s of the merged run differs from the single run's", x[0], x[1])
		}
	}
	status := func(db string) map[string]any {
		var st map[string]any
		if err := json.Unmarshal([]byte(must("status", "--db", db, "--json")), &st); err != nil {
			t.Fatal(err)
		}
		delete(st, "path")
		return st
	}
	a, b := status(single), status(merged)
	if fmt.Sprint(a["dropped"]) != fmt.Sprint(b["dropped"]) || fmt.Sprint(a["conversations"]) != fmt.Sprint(b["conversations"]) {
		t.Errorf("single run kept %v dropped %v; merged kept %v dropped %v", a["conversations"], a["dropped"], b["conversations"], b["dropped"])
	}
	if fmt.Sprint(a["dropped"]) != "map[duplicate:3]" {
		t.Errorf("dropped %v, want the 3 copies", a["dropped"])
	}
}

// TestDryRunOfAShard forecasts the shard's conversations only; the shards'
// forecasts add up to the whole run's.
func TestDryRunOfAShard(t *testing.T) {
	dir := t.TempDir()
	cfg := e2eConfig(t, dir, "5")
	count := func(args ...string) int {
		t.Helper()
		out, err := runAppEnv(t, nil, append([]string{"run", "--config", cfg, "--dry-run", "--json"}, args...)...)
		if err != nil {
			t.Fatalf("dry run %v: %v\n%s", args, err, out)
		}
		var fc struct{ Conversations int }
		if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &fc); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return fc.Conversations
	}
	whole, sum := count(), 0
	for i := 0; i < 4; i++ {
		sum += count("--shard", fmt.Sprintf("%d/4", i))
	}
	if whole == 0 || sum != whole {
		t.Errorf("shards forecast %d conversations in all, the whole run %d", sum, whole)
	}
}

// A dry run writes nothing, so a Ctrl-C ends it at once with the stopped
// status rather than after the whole estimate.
func TestDryRunStopsAtCtrlC(t *testing.T) {
	cfg := e2eConfig(t, t.TempDir(), "5")
	stop := make(chan struct{})
	close(stop)
	var out bytes.Buffer
	app := newApp(&env{stop: stop, stdout: &out, stderr: &out, getenv: func(string) string { return "" }})
	err := app.RunContext(context.Background(), []string{"ac3", "run", "--config", cfg, "--dry-run"})
	var es *run.Exit
	if !errors.As(err, &es) || es.Code != run.ExitStopped {
		t.Fatalf("dry run after Ctrl-C: %v, want exit status %d\n%s", err, run.ExitStopped, out.String())
	}
}

// status writes nothing either: a Ctrl-C before it ends stops it.
func TestStatusStopsAtCtrlC(t *testing.T) {
	db := filepath.Join(t.TempDir(), "run.db")
	mustRun(t, "ingest", "--db", db, repoPath("fixtures", "wildchat", "wildchat-1m-sample10.jsonl"))
	stop := make(chan struct{})
	close(stop)
	var out bytes.Buffer
	app := newApp(&env{stop: stop, stdout: &out, stderr: &out, getenv: func(string) string { return "" }})
	err := app.RunContext(context.Background(), []string{"ac3", "status", "--db", db})
	var es *run.Exit
	if !errors.As(err, &es) || es.Code != run.ExitStopped {
		t.Fatalf("status after Ctrl-C: %v, want exit status %d\n%s", err, run.ExitStopped, out.String())
	}
}
