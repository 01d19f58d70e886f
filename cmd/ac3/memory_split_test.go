package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/memory"
)

const memoryRunConfig = `run: {db: DIR/m.db, out: DIR/out/, seed: 7, workers: 2}
input:
  files: [SAMPLE]
  filter: {user_turns: {min: 2}, dedupe: true}
endpoints:
  main: {base_url: "${TEST_BASE_URL}"}
models:
  m: {endpoint: main}
roles:
  analyzer: {model: m}
  respondent: {model: m}
  judge: {model: m}
stages:
  curate:
    strategies: [fc, ao, gated-reset]
    gated_reset: {floor: 1, cap: 3}
MEMORY
  respond: {strategies: [fc, ao, gated-reset]}
  judge: {pairs: [gated-reset:ao, fc:ao], order: random}
report: {formats: [json, md]}
`

func writeMemoryConfig(t *testing.T, dir, memory string) string {
	t.Helper()
	sample, _ := filepath.Abs("../../fixtures/wildchat/wildchat-1m-sample10.jsonl")
	text := strings.NewReplacer("DIR", dir, "SAMPLE", sample, "MEMORY", memory).Replace(memoryRunConfig)
	path := filepath.Join(dir, "run.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// unitSeqs returns, per variant name, the conversation seqs of stage's
// done units at the variant's current version.
func unitSeqs(t *testing.T, db, stage string) map[string][]int64 {
	t.Helper()
	out := map[string][]int64{}
	for v, us := range doneUnits(t, db, stage) {
		for _, u := range us {
			out[v] = append(out[v], u.ConvSeq)
		}
	}
	return out
}

// doneUnits returns, per variant name, stage's done units at the variant's
// current version.
func doneUnits(t *testing.T, db, stage string) map[string][]ledger.Unit {
	t.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, db, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	plans, err := l.Plans(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]ledger.Unit{}
	for _, v := range plans[stage] {
		err := l.Units(ctx, stage, []ledger.Variant{v}, 0, math.MaxInt64, func(u ledger.Unit) error {
			if u.Status == ledger.Done {
				out[v.Name] = append(out[v.Name], u)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// The offline memory learns from trajectories with decisions and judged
// outcomes (one reflection per conversation, then one consolidation); the
// conversations it learned from are then left out of the operators that use
// it, so of their answers and verdicts, and of the report, which says so;
// include_learning keeps them.
func TestOfflineMemoryLearnsFromOutcomesAndLeavesItsSplitOut(t *testing.T) {
	if testing.Short() {
		t.Skip("several runs end to end")
	}
	srv := startScripted(t)
	dir := t.TempDir()
	vars := map[string]string{"TEST_BASE_URL": srv.URL}
	cfg := writeMemoryConfig(t, dir, "")
	db := filepath.Join(dir, "m.db")

	// 1. A pass without memory: the outcomes learning will read.
	if out, err := runAppEnv(t, vars, "run", "--config", cfg); err != nil {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	pairConvs := func(r reportJSON, pair string) int {
		for _, p := range r.Pairs {
			if p.Pair == pair {
				return p.Dimensions[0].Overall.Conversations
			}
		}
		return -1
	}
	before := pairConvs(readReportJSON(t, filepath.Join(dir, "out", "report.json")), "fc:ao")
	if before < 3 {
		t.Fatalf("the first run judged fc:ao on %d conversations", before)
	}

	// 2. Learn on the first two conversations.
	srv.Reset()
	out, err := runAppEnv(t, vars, "memory", "learn", "--db", db, "--config", cfg, "--conversations", "2")
	if err != nil || !strings.Contains(out, "learned on 2 conversations") {
		t.Fatalf("memory learn: %v\n%s", err, out)
	}
	var reflects, unifies, judged int
	for _, c := range srv.Calls() {
		switch analyzetest.Kind(c.Request) {
		case analyzetest.KindReflect:
			reflects++
			last := c.Request.Last()
			if !strings.Contains(last, "Decision: ") || !strings.Contains(last, "<assistant_reply>") || strings.Contains(last, "<cheatsheet>") {
				t.Errorf("an individual reflection lacks the trajectory or sees a cheatsheet:\n%s", last)
			}
			if strings.Contains(last, "judge on quality: gated-reset's reply") && strings.Contains(last, "against ao, judged on quality at") {
				judged++
			}
		case analyzetest.KindUnify:
			unifies++
			if !strings.Contains(c.Request.Last(), "From conversation 2:") {
				t.Errorf("the consolidation does not hold both reflections:\n%s", c.Request.Last())
			}
		}
	}
	if reflects != 2 || unifies != 1 || judged != 2 {
		t.Errorf("%d reflections (%d with judged outcomes) and %d consolidations, want 2 (2) and 1", reflects, judged, unifies)
	}
	ctx := context.Background()
	l, err := ledger.Open(ctx, db, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	mem, ok, err := memory.LoadOffline(ctx, l)
	l.Close()
	if err != nil || !ok || mem.Reflected != 2 || mem.Judged != 2 || mem.OutcomePair != "gated-reset:ao" || mem.LastSeq == 0 {
		t.Fatalf("stored memory %+v, %v", mem, err)
	}

	// 3. Curate with it: the learning conversations are left out of the
	// operator that uses it, so of its answers and verdicts.
	cfg = writeMemoryConfig(t, dir, "    memory: {regime: offline}")
	if out, err := runAppEnv(t, vars, "run", "--config", cfg); err != nil || !strings.Contains(out, "left out") {
		t.Fatalf("run with memory: %v\n%s", err, out)
	}
	for stage, variant := range map[string]string{curate.StageName: "gated-reset", "respond": "gated-reset", judge.StageName: "gated-reset:ao"} {
		seqs := unitSeqs(t, db, stage)[variant]
		if len(seqs) == 0 {
			t.Errorf("%s %s: nothing after the split", stage, variant)
		}
		for _, s := range seqs {
			if s <= mem.LastSeq {
				t.Errorf("%s %s has a unit of learning conversation %d (split up to %d)", stage, variant, s, mem.LastSeq)
				break
			}
		}
	}
	rep := readReportJSON(t, filepath.Join(dir, "out", "report.json"))
	if rep.MemorySplit == nil || !rep.MemorySplit.Excluded || rep.MemorySplit.Conversations != 2 || rep.Conversations != rep.MemorySplit.Evaluated {
		t.Fatalf("report split %+v, conversations %d", rep.MemorySplit, rep.Conversations)
	}
	all := rep.Conversations + 2
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "left out of this report") {
		t.Errorf("the report does not state the split: %q", rep.Notes)
	}
	for _, p := range rep.Pairs {
		if c := p.Dimensions[0].Overall.Conversations; int64(c) > rep.Conversations {
			t.Errorf("%s counts %d conversations, more than the %d evaluated", p.Pair, c, rep.Conversations)
		}
	}
	if got := pairConvs(rep, "fc:ao"); got != before-2 {
		t.Errorf("fc:ao is reported on %d conversations, want %d (the learning two left out)", got, before-2)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "out", "report.md"))
	if !strings.Contains(string(md), "left out of this report") {
		t.Error("report.md does not state the split")
	}

	// 4. Forced: include_learning keeps them, under another version.
	cfg = writeMemoryConfig(t, dir, "    memory: {regime: offline, include_learning: true}")
	if out, err := runAppEnv(t, vars, "run", "--config", cfg); err != nil {
		t.Fatalf("run with include_learning: %v\n%s", err, out)
	}
	low := false
	for _, s := range unitSeqs(t, db, curate.StageName)["gated-reset"] {
		low = low || s <= mem.LastSeq
	}
	if !low {
		t.Error("include_learning did not curate the learning conversations")
	}
	rep = readReportJSON(t, filepath.Join(dir, "out", "report.json"))
	if rep.MemorySplit == nil || rep.MemorySplit.Excluded || rep.Conversations != all || pairConvs(rep, "fc:ao") != before {
		t.Errorf("forced split %+v, conversations %d, want %d; fc:ao on %d, want %d", rep.MemorySplit, rep.Conversations, all, pairConvs(rep, "fc:ao"), before)
	}
}

type reportJSON struct {
	Conversations int64 `json:"conversations"`
	MemorySplit   *struct {
		Conversations int   `json:"conversations"`
		Excluded      bool  `json:"excluded"`
		Evaluated     int64 `json:"evaluated"`
	} `json:"memory_split"`
	Notes []string `json:"notes"`
	Pairs []struct {
		Pair       string `json:"pair"`
		Dimensions []struct {
			Overall struct {
				Conversations int `json:"conversations"`
			} `json:"overall"`
		} `json:"dimensions"`
	} `json:"pairs"`
}

func readReportJSON(t *testing.T, path string) reportJSON {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r reportJSON
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// rewriteFile replaces pairs of strings in a file (each must be there).
func rewriteFile(t *testing.T, path string, oldNew ...string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i+1 < len(oldNew); i += 2 {
		if !strings.Contains(s, oldNew[i]) {
			t.Fatalf("%s has no %q", path, oldNew[i])
		}
		s = strings.ReplaceAll(s, oldNew[i], oldNew[i+1])
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
