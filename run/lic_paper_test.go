package run_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/run/config"
	"github.com/ac3/ac3/stages/lic/grade"
	"github.com/ac3/ac3/stages/lic/simulate"
)

// paperBaseline says, per graded task, which baseline replicates (1-based)
// of each instance (by its index among the task's five) answer right.
// Worked by hand for App. B.1's selection (fails in at least 3 of N):
//
//	math:     0 fails 5/5 (selected), 1 fails 5/5 (selected, then flagged
//	          by the false-negative check), 2 fails 2/5 (out), 3 fails r2–r4
//	          (3/5, selected; its first failing trace is r2), 4 passes all
//	database: every replicate fails: all five selected
//	actions:  0 fails 5/5 (selected), the others pass every replicate
//
// code runs 4 replicates (task_replicates) and is not graded without code
// execution, so nothing is selected there (the test leaves the sample's
// ungraded tasks out).
var paperBaseline = map[string]map[int][]int{
	grade.TaskMath:    {2: {3, 4, 5}, 3: {1, 5}, 4: {1, 2, 3, 4, 5}},
	grade.TaskActions: {1: {1, 2, 3, 4, 5}, 2: {1, 2, 3, 4, 5}, 3: {1, 2, 3, 4, 5}, 4: {1, 2, 3, 4, 5}},
}

// paperReplay is which arms the replay answers right, per rerun: ao,
// concat, reset and gated-reset always, augment (and its memory row) on
// the first rerun only, fc and rewrite never.
func paperReplay(strategy string, rerun int) bool {
	switch strategy {
	case "ao", "concat", "reset":
		return true
	case "augment":
		return rerun == 0
	}
	return false
}

// gradedSample writes the sample's records of the four graded tasks to
// dir and returns the file.
func gradedSample(t *testing.T, dir string) string {
	t.Helper()
	var keep []json.RawMessage
	for _, r := range sampleRecords(t) {
		if in, err := grade.ParseInstance(r); err == nil && slices.Contains(grade.Tasks(), in.Task) {
			keep = append(keep, r)
		}
	}
	out, _ := json.Marshal(keep)
	path := filepath.Join(dir, "graded.json")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// paperAccuracy is the part of accuracy.json the paper config's test reads.
type paperAccuracy struct {
	Pool []struct {
		Task                                             string
		Instances, Selected, Flagged, Pool, Trajectories int
		BaselineGraded                                   int `json:"baseline_graded"`
		BaselinePassed                                   int `json:"baseline_passed"`
	} `json:"pool"`
	Cells []struct {
		Task, Strategy   string
		Instances, N     int
		Passes           int
		GapClosure       *float64 `json:"gap_closure"`
		InstanceAccuracy *float64 `json:"instance_accuracy"`
	} `json:"cells"`
}

// paperRun is one run of lic-replay-paper.yaml against the scripted
// endpoint: its plan, accuracy section and what the endpoint counted.
type paperRun struct {
	plan                  run.Plan
	acc                   paperAccuracy
	reminded, reflections *atomic.Int64
}

// runPaperConfig runs lic-replay-paper.yaml as shipped (lic.traces set to
// traces unless "") against a fresh scripted endpoint; with fcOnly, the
// replay has the fc arm alone and no memory arm.
func runPaperConfig(t *testing.T, insts []licInstance, traces string, fcOnly bool) paperRun {
	t.Helper()
	dir := t.TempDir()
	srv := llmtest.New(t, llmtest.Options{})
	flagged := ""
	for _, in := range insts {
		if in.in.Task == grade.TaskMath && in.index == 1 {
			flagged = in.first
		}
	}
	// The user simulator gives the lowest piece not yet given, as written.
	srv.Add(llmtest.Rule{Name: "user_sim", SystemContains: "numbered pieces", Func: func(r llmtest.ChatRequest) llmtest.Reply {
		_, left, _ := strings.Cut(r.Last(), "Pieces you have not given yet:\n")
		first := strings.SplitN(strings.TrimSpace(left), "\n", 2)[0]
		var n int
		fmt.Sscanf(first, "(%d)", &n)
		_, text, _ := strings.Cut(first, ") ")
		b, _ := json.Marshal(map[string]any{"message": text, "piece": n})
		return llmtest.Reply{Content: string(b)}
	}})
	srv.Add(llmtest.Rule{Name: "fn_check", SystemContains: "You check a simulated conversation", Func: func(r llmtest.ChatRequest) llmtest.Reply {
		if strings.Contains(r.Last(), flagged) {
			return llmtest.Reply{Content: `{"sufficient": false, "reason": "a piece went missing"}`}
		}
		return llmtest.Reply{Content: `{"sufficient": true, "reason": "all there"}`}
	}})
	var reflections atomic.Int64
	installMemory(srv, func() { reflections.Add(1) })
	installAnalyzer(srv, insts)
	baseline := map[int64]int{}
	for rep := 1; rep <= 5; rep++ {
		baseline[licSeed(1000+rep-1)] = rep
	}
	rerun := map[int64]int{licSeed(0): 0, licSeed(1): 1, licSeed(2): 2}
	var reminded atomic.Int64
	srv.Add(llmtest.Rule{Name: "respondent", Func: func(r llmtest.ChatRequest) llmtest.Reply {
		in := which(insts, requestText(r))
		if in == nil || r.Seed == nil {
			t.Errorf("a request about no instance, or with no seed: %q", requestText(r))
			return llmtest.Reply{Content: "?"}
		}
		if rep, ok := baseline[*r.Seed]; ok {
			right := false
			for _, x := range paperBaseline[in.in.Task][in.index] {
				right = right || x == rep
			}
			return llmtest.Reply{Content: answerFor(in, right)}
		}
		m, ok := rerun[*r.Seed]
		if !ok {
			t.Errorf("a respondent request with seed %d, neither a baseline replicate nor a rerun", *r.Seed)
		}
		if !strings.Contains(requestText(r), in.last) {
			// A trajectory that passed before its last piece (here: at its
			// first message; replayed only with traces: all): the answer is
			// right, as the baseline's was.
			return llmtest.Reply{Content: answerFor(in, true)}
		}
		// restate_calls: gated-reset's rebuilt actions context ends with
		// the reminder to give every call again; no other context has it
		// (reset's, the same otherwise, is told apart by the reminder).
		s := strategyOf(r)
		if strings.Contains(r.Last(), "every function call the whole request needs") {
			reminded.Add(1)
			if s != "reset" || in.in.Task != grade.TaskActions {
				t.Errorf("%s × %s: the call instruction restated", in.in.Task, s)
			}
		}
		return llmtest.Reply{Content: answerFor(in, paperReplay(s, m))}
	}})

	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "k", "OPENAI_MODEL": "m"}
	cfg, err := config.Load("../fixtures/configs/lic-replay-paper.yaml", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	plan, _, err := cfg.Plan(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	plan.DB, plan.LiC.Out, plan.Report.Out = filepath.Join(dir, "run.db"), dir, filepath.Join(dir, "report")
	// The four graded tasks of the sample: the two ungraded ones would only
	// add trajectories that select nothing.
	plan.Ingest.Files = []string{gradedSample(t, dir)}
	if traces != "" {
		plan.LiC.Traces = traces
	}
	if fcOnly {
		plan.LiC.Strategies, plan.LiC.Memory = []string{"fc"}, run.LiCMemory{}
	}
	executeLiC(t, plan, run.Options{}, 15*time.Minute)
	out := paperRun{plan: plan, reminded: &reminded, reflections: &reflections}
	readAccuracy(t, dir, &out.acc)
	return out
}

// TestLiCReplayPaperConfig runs fixtures/configs/lic-replay-paper.yaml as
// shipped (Table 1's protocol: the LiC user simulator, five replicates and
// four on code, selection at 3 failures, the false-negative check, one
// failing trace per instance, three reruns, Huang et al.'s AO, the paper's
// rewrite, the "+ Memory" rows) against the scripted endpoint, and checks
// the pool and the cells against values worked by hand; then again with
// every trace replayed (lic.traces: all), which changes full context's
// accuracy.
func TestLiCReplayPaperConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole LiC protocol")
	}
	insts := loadLiC(t)
	one := runPaperConfig(t, insts, "", false)
	acc, plan := one.acc, one.plan
	reminded, reflections := one.reminded, one.reflections
	c := context.Background()
	// The pool by hand (baseline graded and passed count trajectories:
	// code has 4 an instance, the rest 5).
	wantPool := map[string]string{
		"math":     "instances=5 graded=25 passed=10 selected=3 flagged=1 pool=2",
		"code":     "instances=5 graded=0 passed=0 selected=0 flagged=0 pool=0",
		"database": "instances=5 graded=25 passed=0 selected=5 flagged=0 pool=5",
		"actions":  "instances=5 graded=25 passed=20 selected=1 flagged=0 pool=1",
	}
	for _, p := range acc.Pool {
		got := fmt.Sprintf("instances=%d graded=%d passed=%d selected=%d flagged=%d pool=%d", p.Instances, p.BaselineGraded, p.BaselinePassed, p.Selected, p.Flagged, p.Pool)
		if p.Trajectories != p.Pool {
			t.Errorf("pool %s: %d trajectories replayed for %d instances, want one each", p.Task, p.Trajectories, p.Pool)
		}
		if want, ok := wantPool[p.Task]; !ok || got != want {
			t.Errorf("pool %s: %s, want %s", p.Task, got, want)
		}
	}
	if len(acc.Pool) != len(wantPool) {
		t.Errorf("%d pool rows, want %d", len(acc.Pool), len(wantPool))
	}
	// The cells: math replays instances 0 and 3 (one trace each), database
	// all five, actions its first, three reruns each; augment is right on
	// the first rerun.
	wantCells := map[string][2]int{} // task × strategy → passes, n
	for task, items := range map[string]int{"math": 2, "database": 5, "actions": 1} {
		n := 3 * items
		for strategy, passes := range map[string]int{"fc": 0, "ao": n, "concat": n, "augment": items, "reset": n, "gated-reset": n, "rewrite": 0,
			"augment+memory": items, "reset+memory": n, "gated-reset+memory": n} {
			wantCells[task+" × "+strategy] = [2]int{passes, n}
		}
	}
	seen := 0
	for _, c := range acc.Cells {
		w, ok := wantCells[c.Task+" × "+c.Strategy]
		if !ok {
			if c.N != 0 {
				t.Errorf("%s × %s: %d graded answers, want none", c.Task, c.Strategy, c.N)
			}
			continue
		}
		seen++
		if c.Passes != w[0] || c.N != w[1] {
			t.Errorf("%s × %s: %d of %d passed, want %d of %d", c.Task, c.Strategy, c.Passes, c.N, w[0], w[1])
		}
		// (S − fc) / (ao − fc) with fc at 0 and ao at 1: augment's 1/3.
		if c.Strategy == "augment" && (c.GapClosure == nil || !near(*c.GapClosure, 1.0/3)) {
			t.Errorf("%s × augment: gap closure %v, want 1/3", c.Task, c.GapClosure)
		}
	}
	if seen != len(wantCells) {
		t.Errorf("%d of the %d graded cells found", seen, len(wantCells))
	}
	// The replayed traces: each instance's first failing replicate (math
	// 3's is r2), never one past the task's count.
	l, err := ledger.Open(c, plan.DB, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	replayed := map[string]bool{}
	err = l.EachPage(c, 100, func(page []ledger.Stored, _, _ int64) error {
		for _, st := range page {
			if st.Origin == simulate.Origin {
				replayed[st.Conv.ID] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range insts {
		want := ""
		switch {
		case in.in.Task == grade.TaskMath && in.index == 0:
			want = "#r1"
		case in.in.Task == grade.TaskMath && in.index == 3:
			want = "#r2"
		case in.in.Task == grade.TaskDatabase, in.in.Task == grade.TaskActions && in.index == 0:
			want = "#r1"
		}
		for r := 1; r <= 5; r++ {
			id := simulate.TrajectoryID(in.in.TaskID, r)
			if got := replayed[id]; got != (want == fmt.Sprintf("#r%d", r)) {
				t.Errorf("%s: trajectory %s replayed %v", in.in.TaskID, id, got)
			}
		}
	}
	// Gated Reset's three reruns on the one actions instance; its memory
	// row sends the same requests (the scripted analysis ignores the
	// cheatsheet), which the cache answers.
	if n := reminded.Load(); n != 3 {
		t.Errorf("%d requests restated the call instruction, want 3", n)
	}
	// Each memory row reflects once on each instance of the pool; the
	// reset and gated-reset rows reflect on the same steps and outcomes,
	// so the cache answers one of them: 8 + 8 requests.
	if n := reflections.Load(); n != 2*8 {
		t.Errorf("%d reflections sent, want 16 (augment's and reset's chains, one per pooled instance)", n)
	}

	// lic.traces: all replays every replicate of the selected instances,
	// passes included (only fc is compared, so only fc is replayed). Math instance 3 passed at its first message in r1
	// and r5; replaying those single-shard contexts is right, so fc scores
	// 6 of 30 answers (instances 0 and 3, five traces, three reruns) where
	// the paper's one trace gives 0 of 6; by instance, (0 + 6/15) / 2.
	all := runPaperConfig(t, insts, simulate.TracesAll, true)
	for _, r := range []struct {
		name        string
		acc         paperAccuracy
		passes, n   int
		instanceAcc float64
	}{{"one trace", acc, 0, 6, 0}, {"every trace", all.acc, 6, 30, 0.2}} {
		found := false
		for _, c := range r.acc.Cells {
			if c.Task != grade.TaskMath || c.Strategy != "fc" {
				continue
			}
			found = true
			if c.Passes != r.passes || c.N != r.n || c.InstanceAccuracy == nil || !near(*c.InstanceAccuracy, r.instanceAcc) {
				t.Errorf("%s: math × fc %d of %d, instance accuracy %v; want %d of %d, %v", r.name, c.Passes, c.N, c.InstanceAccuracy, r.passes, r.n, r.instanceAcc)
			}
		}
		if !found {
			t.Errorf("%s: no math × fc cell", r.name)
		}
	}
}
