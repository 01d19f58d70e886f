package run_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/run/config"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/lic/grade"
	"github.com/ac3/ac3/stages/lic/replay"
)

// licSeed reproduces how the client derives the seed of sample i from the
// respondent's configured seed (1 in lic-replay.yaml), so the scripted
// server can tell reruns apart.
func licSeed(i int) int64 {
	if i == 0 {
		return 1
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d/%d", 1, i, 0)
	return int64(h.Sum64() & (1<<31 - 1))
}

type licInstance struct {
	in    *grade.Instance
	last  string // the last shard
	first string
	index int // position among its task's records in the sample
}

// sampleRecords reads the bundled LiC sample, one raw record per instance.
func sampleRecords(t *testing.T) []json.RawMessage {
	t.Helper()
	b, err := os.ReadFile("../fixtures/lic/sample_5_per_task.json")
	if err != nil {
		t.Fatal(err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	return raw
}

func loadLiC(t *testing.T) []licInstance {
	t.Helper()
	var out []licInstance
	count := map[string]int{}
	for _, r := range sampleRecords(t) {
		in, err := grade.ParseInstance(r)
		if err != nil {
			t.Fatal(err)
		}
		var sh struct {
			Shards []struct {
				ID   int    `json:"shard_id"`
				Text string `json:"shard"`
			} `json:"shards"`
		}
		json.Unmarshal(r, &sh)
		first, last := sh.Shards[0], sh.Shards[0]
		for _, s := range sh.Shards {
			if s.ID < first.ID {
				first = s
			}
			if s.ID > last.ID {
				last = s
			}
		}
		out = append(out, licInstance{in: in, first: first.Text, last: last.Text, index: count[in.Task]})
		count[in.Task]++
	}
	return out
}

func licPlan(t *testing.T, srv *llmtest.Server, dir string) run.Plan {
	t.Helper()
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "k", "OPENAI_MODEL": "m"}
	cfg, err := config.Load("../fixtures/configs/lic-replay.yaml", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	plan, _, err := cfg.Plan(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	plan.DB = filepath.Join(dir, "run.db")
	plan.LiC.Out = dir
	plan.Report.Out = filepath.Join(dir, "report")
	return plan
}

// which finds the instance a request is about: the one whose first shard
// (or last, for contexts that dropped the first) it contains.
func which(insts []licInstance, text string) *licInstance {
	for i := range insts {
		if strings.Contains(text, insts[i].first) {
			return &insts[i]
		}
	}
	return nil
}

func requestText(r llmtest.ChatRequest) string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.WriteString(m.Content)
		b.WriteString("\n")
	}
	return b.String()
}

// installAnalyzer scripts the analyzer: its specification and rewrite
// name the instance (SPEC[first shard], BRIEFING[first shard]) so the
// replayed contexts can be told apart, it always finds an issue (so the
// operators act), and on the first two math instances the specification
// gives the reference answer away (the leak the report measures).
func installAnalyzer(srv *llmtest.Server, insts []licInstance) {
	srv.Add(llmtest.Rule{Name: "analyzer", Match: func(r llmtest.ChatRequest) bool { return analyzetest.Kind(r) != "" }, Func: func(r llmtest.ChatRequest) llmtest.Reply {
		n := analyzetest.Nonce(r)
		tag := func(name, body string) string {
			return "<" + name + ` id="` + n + `">` + "\n" + body + "\n</" + name + ">"
		}
		in := which(insts, requestText(r))
		first := "?"
		if in != nil {
			first = in.first
		}
		switch analyzetest.Kind(r) {
		case analyzetest.KindSpec, analyzetest.KindContagious:
			spec := "SPEC[" + first + "]"
			if in != nil && in.in.Task == grade.TaskMath && in.index < 2 {
				ref, _ := grade.GSM8KAnswer(in.in.Answer)
				spec += " The result should come out at " + ref.Text + "."
			}
			return llmtest.Reply{Content: tag("spec", spec)}
		case analyzetest.KindEvaluate:
			return llmtest.Reply{Content: tag("aligned", "work so far") + "\n" + tag("issues", "answered before the details were in")}
		case analyzetest.KindRewrite, analyzetest.KindRewritePaper:
			return llmtest.Reply{Content: tag("context", "BRIEFING["+first+"]")}
		}
		return llmtest.Reply{Content: "unexpected analyzer call"}
	}})
}

// The replay's scripted answers: which instances (by their index among
// their task's five) each strategy answers right, per rerun. reset and
// gated-reset build the same context at the final turn (the gate's floor
// is behind it and the cap is not reached), so the client sends it once
// and both get the same answers.
var replayRight = map[string][3][]int{
	"fc":          {{0}, {}, {0}},
	"ao":          {{0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 2, 3}},
	"concat":      {{0, 1, 2}, {0, 1, 2}, {0, 1, 2}},
	"augment":     {{0, 1}, {0, 1, 2}, {0}},
	"reset":       {{0, 1, 2, 3}, {0, 1, 2}, {0, 1, 2, 3}},
	"gated-reset": {{0, 1, 2, 3}, {0, 1, 2}, {0, 1, 2, 3}},
	"rewrite":     {{4}, {4}, {4}},
}

// strategyOf tells which strategy built a replayed context.
func strategyOf(r llmtest.ChatRequest) string {
	text := requestText(r)
	assistants := 0
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			assistants++
		}
	}
	// Ours and the paper preset's forms: the rewrite's frame or the
	// scripted briefing, the reviewer's note (whose analysis also names
	// SPEC, so it comes before reset), the reset's frame or the scripted
	// specification, our AO placeholder or Huang et al.'s.
	has := func(marks ...string) bool {
		return slices.ContainsFunc(marks, func(m string) bool { return strings.Contains(text, m) })
	}
	switch {
	case has("[Context rewritten]", "BRIEFING["):
		return "rewrite"
	case has("[Review of the conversation so far"):
		return "augment"
	case has("[Context reset]", "SPEC["):
		return "reset"
	case has("[earlier reply omitted]", curate.HuangPlaceholder):
		return "ao"
	case assistants == 0:
		return "concat"
	}
	return "fc"
}

func answerFor(in *licInstance, right bool) string {
	switch in.in.Task {
	case grade.TaskMath:
		if right {
			ref, _ := grade.GSM8KAnswer(in.in.Answer)
			return "Let me work it out.\n" + grade.AnswerPrefix + " " + ref.Text
		}
		return "Let me work it out.\n" + grade.AnswerPrefix + " -1"
	case grade.TaskDatabase:
		if right {
			return "```sql\n" + in.in.ReferenceSQL + "\n```"
		}
		return "```sql\nSELECT 987654321\n```"
	case grade.TaskActions:
		if right {
			refs, _ := grade.ParseReference(in.in.ReferenceAnswer)
			return grade.RenderReference(refs)
		}
		return "[no_such_function(x=1)]"
	}
	return "Here is something."
}

func wilson(x, n int) (float64, float64) {
	const z = 1.959963984540054
	p, nf := float64(x)/float64(n), float64(n)
	c := (p + z*z/(2*nf)) / (1 + z*z/nf)
	h := z / (1 + z*z/nf) * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	return c - h, c + h
}

// mcnemar is the exact two-sided McNemar p: twice the smaller binomial
// tail of the discordant pairs at one half, capped at 1.
func mcnemar(b, c int) float64 {
	n, k := b+c, min(b, c)
	if n == 0 {
		return 1
	}
	tail, choose := 0.0, 1.0
	for i := 0; i <= k; i++ {
		if i > 0 {
			choose = choose * float64(n-i+1) / float64(i)
		}
		tail += choose
	}
	return math.Min(1, 2*tail/math.Pow(2, float64(n)))
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// TestLiCReplaySampleConfig runs fixtures/configs/lic-replay.yaml against
// the scripted endpoint and checks every number of the accuracy section
// against values worked out by hand from replayRight.
func TestLiCReplaySampleConfig(t *testing.T) {
	dir := t.TempDir()
	insts := loadLiC(t)
	srv := llmtest.New(t, llmtest.Options{})
	installAnalyzer(srv, insts)
	rerun := map[int64]int{licSeed(0): 0, licSeed(1): 1, licSeed(2): 2}
	srv.Add(llmtest.Rule{Func: func(r llmtest.ChatRequest) llmtest.Reply {
		in := which(insts, requestText(r))
		if in == nil {
			t.Errorf("a request about no instance: %q", requestText(r))
			return llmtest.Reply{Content: "?"}
		}
		m, replayed := -1, false
		if r.Seed != nil {
			m, replayed = rerun[*r.Seed]
		}
		if !replayed {
			// The baseline: right only on the fifth math instance.
			return llmtest.Reply{Content: answerFor(in, in.in.Task == grade.TaskMath && in.index == 4)}
		}
		right := false
		for _, i := range replayRight[strategyOf(r)][m] {
			right = right || i == in.index
		}
		return llmtest.Reply{Content: answerFor(in, right)}
	}})
	plan := licPlan(t, srv, dir)
	// The whole experiment (30 instances, 7 strategies, 3 reruns, SQL on
	// random databases) takes far longer under -race than ctx's bound.
	executeLiC(t, plan, run.Options{}, 15*time.Minute)
	var acc struct {
		RawPool []map[string]any `json:"pool"`
		Cells   []struct {
			Task, Strategy           string
			Items, Reruns, N, Passes int
			Ungraded                 int
			Accuracy, Mean, SD       *float64
			GapClosure               *float64 `json:"gap_closure"`
			Interval                 struct{ Lo, Hi *float64 }
			Instances                int
			InstanceAccuracy         *float64             `json:"instance_accuracy"`
			InstVsFC                 *struct{ Pairs int } `json:"instance_vs_fc"`
			VsFC                     *struct {
				Pairs, Better, Worse int
				P                    float64
			} `json:"vs_fc"`
			VsAO *struct {
				Pairs, Better, Worse int
				P                    float64
			} `json:"vs_ao"`
		} `json:"cells"`
		Leak []struct {
			Strategy        string
			Analyses, Leaks int
			Rate            float64
			LeakFree        struct {
				Items int
				Gain  float64
				VsFC  struct {
					Pairs, Better, Worse int
					P                    float64
				} `json:"vs_fc"`
			} `json:"leak_free"`
		} `json:"leak"`
	}
	readAccuracy(t, dir, &acc)

	// The pool: every instance of the sample (unselected, no check), one
	// trajectory each; the baseline passed only the fifth math instance,
	// and code is not graded without code execution.
	wantPool := map[string]string{
		"math":      "instances=5 graded=5 passed=1 selected=5 flagged=0 pool=5 trajectories=5",
		"code":      "instances=5 graded=0 passed=0 selected=5 flagged=0 pool=5 trajectories=5",
		"database":  "instances=5 graded=5 passed=0 selected=5 flagged=0 pool=5 trajectories=5",
		"actions":   "instances=5 graded=5 passed=0 selected=5 flagged=0 pool=5 trajectories=5",
		"data2text": "instances=5 graded=0 passed=0 selected=5 flagged=0 pool=5 trajectories=5",
		"summary":   "instances=5 graded=0 passed=0 selected=5 flagged=0 pool=5 trajectories=5",
	}
	if len(acc.RawPool) != len(wantPool) {
		t.Errorf("%d pool rows, want %d", len(acc.RawPool), len(wantPool))
	}
	for _, p := range acc.RawPool {
		got := fmt.Sprintf("instances=%v graded=%v passed=%v selected=%v flagged=%v pool=%v trajectories=%v",
			p["instances"], p["baseline_graded"], p["baseline_passed"], p["selected"], p["flagged"], p["pool"], p["trajectories"])
		if want := wantPool[p["task"].(string)]; got != want {
			t.Errorf("pool %s: %s, want %s", p["task"], got, want)
		}
	}

	// By hand, for each graded task (5 items × 3 reruns = 15 answers):
	// passes per rerun from replayRight; accuracy = passes / 15; gap
	// closure over ao − fc = (12 − 2) / 15.
	type want struct {
		perRerun   [3]int
		vsFC, vsAO [2]int // better, worse
		gap        float64
		mean, sd   float64
		noFC, noAO bool
	}
	sd := func(a, b, c float64) float64 {
		m := (a + b + c) / 3
		return math.Sqrt(((a-m)*(a-m) + (b-m)*(b-m) + (c-m)*(c-m)) / 2)
	}
	wants := map[string]want{
		"fc":          {perRerun: [3]int{1, 0, 1}, noFC: true, vsAO: [2]int{0, 10}, gap: 0, mean: 2.0 / 15, sd: sd(.2, 0, .2)},
		"ao":          {perRerun: [3]int{4, 4, 4}, vsFC: [2]int{10, 0}, noAO: true, gap: 1, mean: .8, sd: 0},
		"concat":      {perRerun: [3]int{3, 3, 3}, vsFC: [2]int{7, 0}, vsAO: [2]int{0, 3}, gap: .7, mean: .6, sd: 0},
		"augment":     {perRerun: [3]int{2, 3, 1}, vsFC: [2]int{4, 0}, vsAO: [2]int{0, 6}, gap: .4, mean: .4, sd: .2},
		"reset":       {perRerun: [3]int{4, 3, 4}, vsFC: [2]int{9, 0}, vsAO: [2]int{0, 1}, gap: .9, mean: 11.0 / 15, sd: sd(.8, .6, .8)},
		"gated-reset": {perRerun: [3]int{4, 3, 4}, vsFC: [2]int{9, 0}, vsAO: [2]int{0, 1}, gap: .9, mean: 11.0 / 15, sd: sd(.8, .6, .8)},
		"rewrite":     {perRerun: [3]int{1, 1, 1}, vsFC: [2]int{3, 2}, vsAO: [2]int{3, 12}, gap: .1, mean: .2, sd: 0},
	}
	order := []string{"fc", "ao", "concat", "augment", "reset", "gated-reset", "rewrite"}
	tasks := []string{"math", "code", "database", "actions", "data2text", "summary"}
	if len(acc.Cells) != len(tasks)*len(order) {
		t.Fatalf("%d cells, want %d", len(acc.Cells), len(tasks)*len(order))
	}
	for k, c := range acc.Cells {
		task, strategy := tasks[k/len(order)], order[k%len(order)]
		if c.Task != task || c.Strategy != strategy {
			t.Fatalf("cell %d is %s × %s, want %s × %s", k, c.Task, c.Strategy, task, strategy)
		}
		name := task + " × " + strategy
		if c.Items != 5 || c.Reruns != 3 {
			t.Errorf("%s: %d items × %d reruns, want 5 × 3", name, c.Items, c.Reruns)
		}
		if task != "math" && task != "database" && task != "actions" {
			if c.N != 0 || c.Ungraded != 15 || c.Accuracy != nil || c.GapClosure != nil {
				t.Errorf("%s: n=%d ungraded=%d accuracy=%v gap=%v; want nothing graded", name, c.N, c.Ungraded, c.Accuracy, c.GapClosure)
			}
			continue
		}
		w := wants[strategy]
		passes := w.perRerun[0] + w.perRerun[1] + w.perRerun[2]
		lo, hi := wilson(passes, 15)
		if c.N != 15 || c.Passes != passes || c.Ungraded != 0 {
			t.Errorf("%s: %d of %d passed (%d ungraded), want %d of 15", name, c.Passes, c.N, c.Ungraded, passes)
		}
		// One trace per instance, each answered 3 times: the instance
		// accuracy is the pooled one, and the headline pairs are the 5
		// instances.
		if c.Instances != 5 || c.InstanceAccuracy == nil || !near(*c.InstanceAccuracy, float64(passes)/15) || (!w.noFC && (c.InstVsFC == nil || c.InstVsFC.Pairs != 5)) {
			t.Errorf("%s: %d instances, instance accuracy %v, instance pairs %+v; want 5, %v, 5", name, c.Instances, c.InstanceAccuracy, c.InstVsFC, float64(passes)/15)
		}
		if c.Accuracy == nil || !near(*c.Accuracy, float64(passes)/15) {
			t.Errorf("%s: accuracy %v, want %v", name, c.Accuracy, float64(passes)/15)
		}
		if c.Interval.Lo == nil || !near(*c.Interval.Lo, lo) || !near(*c.Interval.Hi, hi) {
			t.Errorf("%s: Wilson %v–%v, want %v–%v", name, c.Interval.Lo, c.Interval.Hi, lo, hi)
		}
		if c.Mean == nil || !near(*c.Mean, w.mean) || c.SD == nil || !near(*c.SD, w.sd) {
			t.Errorf("%s: mean %v sd %v, want %v ± %v", name, c.Mean, c.SD, w.mean, w.sd)
		}
		if c.GapClosure == nil || !near(*c.GapClosure, w.gap) {
			t.Errorf("%s: gap closure %v, want %v", name, c.GapClosure, w.gap)
		}
		check := func(ref string, got *struct {
			Pairs, Better, Worse int
			P                    float64
		}, bw [2]int, none bool) {
			if none {
				if got != nil {
					t.Errorf("%s: a test against itself: %+v", name, got)
				}
				return
			}
			if got == nil || got.Pairs != 15 || got.Better != bw[0] || got.Worse != bw[1] || !near(got.P, mcnemar(bw[0], bw[1])) {
				t.Errorf("%s vs %s: %+v, want 15 pairs, +%d/−%d, p %v", name, ref, got, bw[0], bw[1], mcnemar(bw[0], bw[1]))
			}
		}
		check("fc", c.VsFC, w.vsFC, w.noFC)
		check("ao", c.VsAO, w.vsAO, w.noAO)
	}
	// The p values worked out by hand for two of them.
	if !near(mcnemar(10, 0), 2.0/1024) || !near(mcnemar(3, 12), 2*576.0/32768) {
		t.Fatal("the test's own McNemar is wrong")
	}

	// The leak: the analyzer's specification gave the answer away on the
	// first two of the five math instances, for every operator that
	// analyzed the final turn.
	if len(acc.Leak) != 4 {
		t.Fatalf("leak rows %+v, want augment, reset, gated-reset, rewrite", acc.Leak)
	}
	// §5.1's gain on the rest: items 2, 3 and 4, where fc is always
	// wrong; from replayRight, augment is right on item 2 once of three
	// (gain 1/9), reset and gated-reset on item 2 three times and item 3
	// twice (5/9), rewrite on item 4 three times (1/3).
	leakFree := map[string]struct {
		gain   float64
		better int
	}{"augment": {1.0 / 9, 1}, "reset": {5.0 / 9, 5}, "gated-reset": {5.0 / 9, 5}, "rewrite": {1.0 / 3, 3}}
	for _, l := range acc.Leak {
		if l.Analyses != 5 || l.Leaks != 2 || !near(l.Rate, .4) {
			t.Errorf("leak of %s: %d of %d (%v), want 2 of 5", l.Strategy, l.Leaks, l.Analyses, l.Rate)
		}
		w := leakFree[l.Strategy]
		lf := l.LeakFree
		if lf.Items != 3 || !near(lf.Gain, w.gain) || lf.VsFC.Pairs != 9 || lf.VsFC.Better != w.better || lf.VsFC.Worse != 0 || !near(lf.VsFC.P, mcnemar(w.better, 0)) {
			t.Errorf("leak-free gain of %s: %+v, want 3 items, gain %v, +%d/−0 of 9 pairs", l.Strategy, lf, w.gain, w.better)
		}
	}

	md, err := os.ReadFile(filepath.Join(dir, "accuracy.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"| math | fc | 5 | 3 | 13.3% |",
		"| database | gated-reset | 5 | 3 | 73.3% |",
		"| actions | rewrite | 5 | 3 | 20.0% |",
		"| math | 5 | 1/5 | 5 | 0 | 5 | 5 |",
	} {
		if !strings.Contains(string(md), line) {
			t.Errorf("accuracy.md lacks %q:\n%s", line, md)
		}
	}

	// inspect's view of one trajectory's grades: the first math instance,
	// which fc answered right on reruns 0 and 2 only.
	c := context.Background()
	l, err := ledger.Open(c, plan.DB, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var shown strings.Builder
	err = replay.Show(c, &shown, l, "sharded-GSM8K/1246#r1", 4)
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"fc turn 4 rerun 0: PASS", "fc turn 4 rerun 1: FAIL", "ao turn 4 rerun 1: PASS", "artifact: -1", "found by: answer prefix"} {
		if !strings.Contains(shown.String(), line) {
			t.Errorf("the grades shown lack %q:\n%s", line, shown.String())
		}
	}

	// Running the same config again finds everything done.
	calls := srv.Count()
	executeLiC(t, plan, run.Options{}, 15*time.Minute)
	if srv.Count() != calls {
		t.Errorf("the second run made %d calls", srv.Count()-calls)
	}
}

// A LiC step whose trajectories failed stops the experiment there; running
// it again cannot get further until they are retried, so the run is not
// "stopped" (run again to continue) but blocked, with its failed units.
func TestLiCBlockedByFailedUnitsSaysSo(t *testing.T) {
	dir := t.TempDir()
	srv := llmtest.New(t, llmtest.Options{Default: llmtest.Reply{Content: "?"}})
	plan := licPlan(t, srv, dir)
	plan.LiC.Replicates, plan.LiC.MinFailures = 1, 1
	c, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for pass := 1; pass <= 2; pass++ {
		res, err := run.Execute(c, plan, run.Options{})
		if err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		if res.Stopped || res.Blocked == "" || len(res.Failed) == 0 {
			t.Fatalf("pass %d: stopped %v, blocked %q, failed %+v; want blocked with the failed units", pass, res.Stopped, res.Blocked, res.Failed)
		}
	}
}

// TestLiCSelectRespondent: with select_respondent the baseline trajectories
// that select the pool are the selecting model's, and the replay answers
// with the respondent's (the paper's Tables 2, 5 and 6).
func TestLiCSelectRespondent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the LiC sample")
	}
	srv := llmtest.New(t, llmtest.Options{Default: llmtest.Reply{Content: "Final answer: 1\n```sql\nSELECT 1\n```\n[f(a=1)]"}})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	body := `run: {db: ` + filepath.Join(dir, "run.db") + `, out: ` + dir + `}
input: {files: [` + filepath.Join(must(filepath.Abs("../fixtures/lic/sample_5_per_task.json"))) + `], format: lic}
endpoints: {main: {base_url: "` + srv.URL + `", api_key_env: K}}
models:
  replay-m: {endpoint: main, name: replay-m}
  select-m: {endpoint: main, name: select-m}
roles:
  respondent: {model: replay-m}
  selector: {model: select-m}
  analyzer: {model: replay-m}
lic: {strategies: [fc], mode: verbatim, replicates: 1, select_respondent: selector, out: ` + dir + `}
`
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	env := func(k string) string { return map[string]string{"K": "k"}[k] }
	c, err := config.Load(cfg, env)
	if err != nil {
		t.Fatal(err)
	}
	plan, _, err := c.Plan(env)
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Execute(context.Background(), plan, run.Options{})
	if err != nil || res.Stopped || len(res.FailedTasks()) > 0 {
		t.Fatalf("%+v %v", res, err)
	}
	// Verbatim: the baseline sends every shard to the selector; the replay
	// asks the respondent once per replayed trajectory (the final turn).
	byModel := map[string]int{}
	for _, call := range srv.Calls() {
		byModel[call.Request.Model]++
	}
	if byModel["select-m"] == 0 || byModel["replay-m"] == 0 || byModel["select-m"] <= byModel["replay-m"] || len(byModel) != 2 {
		t.Errorf("requests by model %v; want the baseline on select-m and the replay on replay-m", byModel)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// executeLiC runs plan to the end within limit and fails the test when the
// run stopped or a task failed.
func executeLiC(t *testing.T, plan run.Plan, opts run.Options, limit time.Duration) {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	res, err := run.Execute(c, plan, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped || len(res.FailedTasks()) > 0 {
		t.Fatalf("the run stopped or failed: %+v", res)
	}
}

// readAccuracy decodes the accuracy.json the run wrote into dir into v.
func readAccuracy(t *testing.T, dir string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "accuracy.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}
