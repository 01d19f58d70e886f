package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/ledger"
)

// ingestSettings is the filter settings a run stored at its first ingest.
func ingestSettings(t *testing.T, db string) string {
	t.Helper()
	l, err := ledger.Open(context.Background(), db, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	v, _, err := l.Meta(context.Background(), "ingest.settings")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDedupeFlagForms(t *testing.T) {
	sample := repoPath("fixtures", "wildchat", "wildchat-1m-sample10.jsonl")
	for _, tc := range []struct {
		name    string
		args    []string // before the file
		want    string   // in the stored settings
		notWant string
		err     string // in the error, when it must fail
	}{
		{name: "off", notWant: "dedupe"},
		{name: "bare before the files, as before modes: exact", args: []string{"--dedupe"}, want: `"dedupe":true`, notWant: "near"},
		{name: "exact", args: []string{"--dedupe", "exact"}, want: `"dedupe":true`, notWant: "near"},
		{name: "exact with =", args: []string{"--dedupe=exact"}, want: `"dedupe":true`, notWant: "near"},
		{name: "near", args: []string{"--dedupe", "near"}, want: `"dedupe":true,"near":{"threshold":0.8,"shingle_words":3}`},
		{name: "near with =", args: []string{"--dedupe=near"}, want: `"dedupe":true,"near":{"threshold":0.8,"shingle_words":3}`},
		{name: "near, tuned after", args: []string{"--dedupe", "near", "--near-threshold", "0.9", "--near-shingle", "5"}, want: `"near":{"threshold":0.9,"shingle_words":5}`},
		{name: "near, tuned before", args: []string{"--near-threshold", "0.85", "--dedupe", "near"}, want: `"near":{"threshold":0.85,"shingle_words":3}`},
		{name: "unknown mode", args: []string{"--dedupe=maybe"}, err: `--dedupe "maybe": want exact or near`},
		{name: "a flag where the mode goes", args: []string{"--dedupe", "--min-turns", "2"}, err: "--dedupe takes a mode, exact or near, and got the flag --min-turns"},
		{name: "threshold out of range", args: []string{"--dedupe", "near", "--near-threshold", "0.3"}, err: "--near-threshold: 0.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "run.db")
			args := append(append([]string{"ingest", "--db", db}, tc.args...), sample)
			_, errs, err := runApp(t, args...)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error()+errs, tc.err) {
					t.Fatalf("error %v (stderr %q), want one containing %q", err, errs, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ac3 %s: %v\n%s", strings.Join(args, " "), err, errs)
			}
			got := ingestSettings(t, db)
			if tc.want != "" && !strings.Contains(got, tc.want) || tc.notWant != "" && strings.Contains(got, tc.notWant) {
				t.Errorf("settings %s; want %q in them and not %q", got, tc.want, tc.notWant)
			}
		})
	}
}

// A file named like the mode makes --dedupe near ambiguous (before modes,
// it meant exact dedupe of that file): refused, with the ways to say which
// is meant.
func TestDedupeWordThatIsAFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "near"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	_, _, err := runApp(t, "ingest", "--db", filepath.Join(dir, "run.db"), "--dedupe", "near", "other.jsonl")
	if err == nil || !strings.Contains(err.Error(), "--dedupe exact near") || !strings.Contains(err.Error(), "./near") {
		t.Fatalf("error %v, want the ambiguity explained", err)
	}
}

// The pairs are exported as their own kind; a run without near dedupe has
// none, and the file is still written.
func TestExportDuplicates(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "run.db")
	mustRun(t, "ingest", "--db", db, "--dedupe", "near", repoPath("fixtures", "wildchat", "wildchat-1m-sample10.jsonl"))
	out := filepath.Join(dir, "dups.jsonl")
	got := mustRun(t, "export", "--db", db, "--what", "duplicates", "--format", "jsonl", "--out", out)
	if !strings.Contains(got, "duplicates") {
		t.Errorf("export said %q", got)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}
}

// writeNearInput writes n canonical conversations, one in five a near copy
// of an earlier one (its user turns with one word changed, other answers).
func writeNearInput(t *testing.T, path string, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(9, 9))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	var users []string
	for i := range n {
		var user string
		if i > 0 && r.IntN(5) == 0 {
			w := strings.Fields(users[r.IntN(len(users))])
			w[r.IntN(len(w))] = "edited"
			user = strings.Join(w, " ")
		} else {
			w := make([]string, 40+r.IntN(40))
			for k := range w {
				w[k] = fmt.Sprint("w", r.IntN(20000))
			}
			user = strings.Join(w, " ")
		}
		users = append(users, user)
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("c%05d", i), "language": "English", "messages": []map[string]string{
			{"role": "user", "content": user}, {"role": "assistant", "content": fmt.Sprint("answer ", i)},
		}})
		bw.Write(append(line, '\n'))
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestNearDedupeSurvivesKills kills `ac3 ingest --dedupe near` with SIGKILL
// three times, each once the run holds a seeded share of the reference
// run's conversations, resumes it, and checks that the kept conversations
// and the near-duplicate pairs are exactly those of an ingest that was
// never interrupted.
func TestNearDedupeSurvivesKills(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for several seconds")
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "chats.jsonl")
	writeNearInput(t, in, 9000)
	ingest := func(db string) *exec.Cmd {
		cmd := exec.Command(ac3Binary(), "ingest", "--db", db, "--dedupe", "near", in)
		cmd.Env = append(os.Environ(), "AC3_TEST_AS_CLI=1")
		return cmd
	}
	exports := func(db string) (conversations, duplicates []byte) {
		for _, what := range []string{"conversations", "duplicates"} {
			out := filepath.Join(dir, filepath.Base(db)+"."+what+".jsonl")
			mustRun(t, "export", "--db", db, "--what", what, "--format", "jsonl", "--out", out)
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if what == "conversations" {
				conversations = b
			} else {
				duplicates = b
			}
		}
		return conversations, duplicates
	}
	ref := filepath.Join(dir, "ref.db")
	if out, err := ingest(ref).CombinedOutput(); err != nil {
		t.Fatalf("reference ingest: %v\n%s", err, out)
	}
	total := runProgress(ref)
	wantConvs, wantDups := exports(ref)
	if n := bytes.Count(wantDups, []byte("\n")); n < 1000 {
		t.Fatalf("the reference run dropped %d near duplicates; the test needs more", n)
	}
	db := filepath.Join(dir, "killed.db")
	rng := rand.New(rand.NewPCG(27, 1))
	const kills = 3
	for i := range kills {
		target := int64((float64(i) + 0.2 + 0.6*rng.Float64()) * float64(total) / (kills + 1))
		at := killAtProgress(t, ingest(db), db, target, i+1)
		t.Logf("kill %d at %d of %d conversations (target %d)", i+1, at, total, target)
	}
	if p := runProgress(db); p >= total {
		t.Fatalf("the ingest was complete (%d of %d) before the final resume: the kills came too late", p, total)
	}
	if out, err := ingest(db).CombinedOutput(); err != nil {
		t.Fatalf("final ingest: %v\n%s", err, out)
	}
	gotConvs, gotDups := exports(db)
	if !bytes.Equal(gotConvs, wantConvs) {
		t.Errorf("the kept conversations differ after kills and resume (%d vs %d bytes)", len(gotConvs), len(wantConvs))
	}
	if !bytes.Equal(gotDups, wantDups) {
		t.Errorf("the near-duplicate pairs differ after kills and resume (%d vs %d bytes)", len(gotDups), len(wantDups))
	}
}

// convert reads --dedupe as ingest does: a bad mode is refused, not run
// as if there were no --dedupe, and a good one is refused for what it is
// (dedupe needs a run file).
func TestConvertReadsDedupeAsIngest(t *testing.T) {
	sample := repoPath("fixtures", "wildchat", "wildchat-1m-sample10.jsonl")
	out := filepath.Join(t.TempDir(), "out.jsonl")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dedupe=maybe", sample}, `--dedupe "maybe"`},
		{[]string{"--dedupe", sample}, "needs a run file"},
		{[]string{"--dedupe", "near", sample}, "needs a run file"},
	} {
		_, _, err := runApp(t, append([]string{"convert", "--out", out}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("convert %v: %v; want an error naming %q", tc.args, err, tc.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused convert wrote its output")
	}
}
