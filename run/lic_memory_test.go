package run_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
	"github.com/ac3/ac3/stages/lic/grade"
	"github.com/ac3/ac3/stages/lic/replay"
)

// installMemory scripts the memory calls: a reflection gives one
// takeaway (and calls reflected, when set), a consolidation a cheatsheet
// that names the end of its request.
func installMemory(srv *llmtest.Server, reflected func()) {
	tag := func(r llmtest.ChatRequest, name, body string) llmtest.Reply {
		return llmtest.Reply{Content: "<" + name + ` id="` + analyzetest.Nonce(r) + `">` + "\n" + body + "\n</" + name + ">"}
	}
	srv.Add(llmtest.Rule{Name: "memory", Match: func(r llmtest.ChatRequest) bool {
		k := analyzetest.Kind(r)
		return k == analyzetest.KindReflect || k == analyzetest.KindUnify
	}, Func: func(r llmtest.ChatRequest) llmtest.Reply {
		if analyzetest.Kind(r) == analyzetest.KindReflect {
			if reflected != nil {
				reflected()
			}
			return tag(r, "takeaways", "- a takeaway")
		}
		return tag(r, "cheatsheet", "notes after "+r.Last()[len(r.Last())-40:])
	}})
}

// TestLiCMemoryArm runs lic-replay.yaml with fc and the memory arm of reset
// (lic.memory) against the scripted endpoint: the arm's row is in the
// accuracy section with the numbers worked out by hand from replayRight,
// each instance's step is recorded once, in the seeded order, and each
// reflection is told the instance's graded outcome.
func TestLiCMemoryArm(t *testing.T) {
	dir := t.TempDir()
	insts := loadLiC(t)
	srv := llmtest.New(t, llmtest.Options{})
	installMemory(srv, nil)
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
			return llmtest.Reply{Content: answerFor(in, false)}
		}
		right := false
		for _, i := range replayRight[strategyOf(r)][m] {
			right = right || i == in.index
		}
		return llmtest.Reply{Content: answerFor(in, right)}
	}})
	plan := licPlan(t, srv, dir)
	plan.LiC.Strategies = []string{"fc"}
	plan.LiC.Memory = run.LiCMemory{Strategies: []string{"reset"}, Seed: 7}
	var log strings.Builder
	executeLiC(t, plan, run.Options{Log: &log}, 10*time.Minute)
	if !strings.Contains(log.String(), "the memory arm (reset+memory) is sequential") {
		t.Errorf("the log does not say the arm is sequential:\n%s", log.String())
	}
	var acc struct {
		Cells []struct {
			Task, Strategy   string
			Items, N, Passes int
		} `json:"cells"`
		Notes []string `json:"notes"`
	}
	readAccuracy(t, dir, &acc)
	// By hand from replayRight: reset answers instances {0,1,2,3},
	// {0,1,2}, {0,1,2,3} right in reruns 1-3 (11 of 15); fc {0}, {}, {0}.
	got := map[[2]string][3]int{}
	for _, cl := range acc.Cells {
		got[[2]string{cl.Task, cl.Strategy}] = [3]int{cl.Items, cl.N, cl.Passes}
	}
	for _, task := range []string{grade.TaskMath, grade.TaskDatabase, grade.TaskActions} {
		if g := got[[2]string{task, "reset+memory"}]; g != [3]int{5, 15, 11} {
			t.Errorf("%s reset+memory: items, n, passes = %v, want [5 15 11]", task, g)
		}
		if g := got[[2]string{task, "fc"}]; g != [3]int{5, 15, 2} {
			t.Errorf("%s fc: items, n, passes = %v, want [5 15 2]", task, g)
		}
	}
	if !strings.Contains(strings.Join(acc.Notes, "\n"), "memory arm") {
		t.Errorf("no note on the memory arm: %q", acc.Notes)
	}

	l, err := ledger.Open(context.Background(), plan.DB, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	steps, err := replay.MemoryResults(context.Background(), l)
	if err != nil || len(steps) != len(insts) {
		t.Fatalf("%d steps, err %v", len(steps), err)
	}
	var items []replay.Item
	for _, st := range steps {
		items = append(items, replay.Item{Seq: st.Seq, ID: st.Conv})
	}
	order := replay.Order(items, 7)
	for i, st := range steps {
		if st.Conv != order[i].ID || st.Pos != i+1 {
			t.Errorf("step %d is %s, the seeded order gives %s", i+1, st.Conv, order[i].ID)
		}
		if i > 0 && st.Before != steps[i-1].After {
			t.Errorf("step %d read cheatsheet %s, step %d left %s", i+1, st.Before, i, steps[i-1].After)
		}
		graded := st.Task == grade.TaskMath || st.Task == grade.TaskDatabase || st.Task == grade.TaskActions
		if graded == strings.HasPrefix(st.Outcome, "not graded") {
			t.Errorf("step %d (%s): outcome %q", i+1, st.Task, st.Outcome)
		}
	}
	// Each reflection was told its instance's outcome.
	reflections := 0
	for _, call := range srv.Calls() {
		if analyzetest.Kind(call.Request) == analyzetest.KindReflect {
			reflections++
			if !strings.Contains(call.Request.Last(), "Overall outcome: ") || strings.Contains(call.Request.Last(), "Overall outcome: not known") {
				t.Errorf("a reflection without the outcome:\n%s", call.Request.Last())
			}
		}
	}
	if reflections != len(insts) {
		t.Errorf("%d reflections, want %d", reflections, len(insts))
	}
}

// A memory step whose call fails (the respondent refuses one instance's
// request) teaches nothing and is recorded as failed: the run ends as
// failed (exit 2, naming lic-memory) instead of reporting a smaller n as
// complete, and 'ac3 retry --stage lic-memory' drops the chain from that
// step on, so the next run takes those instances again and completes.
func TestLiCMemoryArmFailedStep(t *testing.T) {
	dir := t.TempDir()
	insts := loadLiC(t)
	var refuse atomic.Bool
	refuse.Store(true)
	victim := ""
	for _, in := range insts {
		if in.in.Task == grade.TaskDatabase && in.index == 2 {
			victim = in.first
		}
	}
	srv := llmtest.New(t, llmtest.Options{})
	installMemory(srv, nil)
	installAnalyzer(srv, insts)
	srv.Add(llmtest.Rule{Name: "refused", Match: func(r llmtest.ChatRequest) bool {
		return refuse.Load() && strategyOf(r) == "reset" && strings.Contains(requestText(r), victim)
	}, Fault: llmtest.Fault{Kind: llmtest.Status, Status: 400, Message: "this request is refused"}})
	srv.Add(llmtest.Rule{Func: func(r llmtest.ChatRequest) llmtest.Reply {
		in := which(insts, requestText(r))
		if in == nil {
			return llmtest.Reply{Content: "?"}
		}
		return llmtest.Reply{Content: answerFor(in, strategyOf(r) == "reset")}
	}})
	plan := licPlan(t, srv, dir)
	plan.LiC.Strategies = []string{"fc"}
	plan.LiC.Memory = run.LiCMemory{Strategies: []string{"reset"}, Seed: 7}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := run.Execute(ctx, plan, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run.Finish(res, nil, &out, plan.DB, false); run.ExitCode(err) != run.ExitFailed {
		t.Fatalf("a run with a failed memory step ended with %v:\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "failed: lic-memory/reset+memory: 1 tasks") || !strings.Contains(out.String(), "--stage lic-memory") {
		t.Errorf("the closing lines do not name the failed step:\n%s", out.String())
	}

	// The accuracy section says it is incomplete.
	memoryFailed := func() (int, string) {
		var acc struct {
			MemoryFailed int      `json:"memory_failed"`
			Notes        []string `json:"notes"`
		}
		readAccuracy(t, dir, &acc)
		return acc.MemoryFailed, strings.Join(acc.Notes, "\n")
	}
	if n, notes := memoryFailed(); n != 1 || !strings.Contains(notes, "INCOMPLETE: 1 steps of the memory arm failed") {
		t.Errorf("accuracy: %d memory steps failed, notes:\n%s", n, notes)
	}

	l, err := ledger.Open(ctx, plan.DB, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	failed, err := replay.FailedSteps(ctx, l)
	if err != nil || len(failed) != 1 || !strings.Contains(failed[0].Skipped, "answering failed") {
		t.Fatalf("failed steps %+v, %v", failed, err)
	}
	pos := failed[0].Pos
	n, err := run.Requeue(ctx, l, replay.MemoryStage)
	if err != nil || n != 1 {
		t.Fatalf("requeue: %d, %v", n, err)
	}
	steps, err := replay.MemoryResults(ctx, l)
	l.Close()
	if err != nil || len(steps) != pos-1 {
		t.Fatalf("after retry %d steps are kept, want the %d before the failed one (%v)", len(steps), pos-1, err)
	}

	refuse.Store(false)
	res, err = run.Execute(ctx, plan, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run.Finish(res, nil, &out, plan.DB, false); err != nil {
		t.Fatalf("the run after the retry: %v\n%s", err, out.String())
	}
	l, err = ledger.Open(ctx, plan.DB, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if steps, err = replay.MemoryResults(ctx, l); err != nil || len(steps) != len(insts) {
		t.Fatalf("%d steps after the retry, want %d (%v)", len(steps), len(insts), err)
	}
	for _, st := range steps {
		if st.Failed {
			t.Errorf("step %d (%s) failed again", st.Pos, st.Conv)
		}
	}
	if n, notes := memoryFailed(); n != 0 || strings.Contains(notes, "INCOMPLETE") {
		t.Errorf("after the retry: %d memory steps failed, notes:\n%s", n, notes)
	}
}
