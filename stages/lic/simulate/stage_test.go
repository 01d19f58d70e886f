package simulate_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/io/lic"
	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/stages/lic/grade"
	"github.com/ac3/ac3/stages/lic/simulate"
)

const samplePath = "../../../fixtures/lic/sample_5_per_task.json"

// loadSample reads the sample's records of the given tasks.
func loadSample(t *testing.T, tasks ...string) []*conv.Conversation {
	t.Helper()
	f, err := os.Open(samplePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := lic.NewReader(f, "sample_5_per_task.json")
	var out []*conv.Conversation
	for {
		rec, err := r.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil || rec.Conv == nil {
			t.Fatalf("reading sample: %v %+v", err, rec.Bad)
		}
		in, err := grade.ParseInstance(rec.Conv.Meta)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			if in.Task == task {
				out = append(out, rec.Conv)
			}
		}
	}
	return out
}

func openRun(t *testing.T, convs []*conv.Conversation) *ledger.Ledger {
	t.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "run.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	in, err := l.AddInput(ctx, ledger.Input{Path: samplePath, Format: "lic"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.CommitIngest(ctx, ledger.IngestBatch{InputID: in.ID, Finished: true, Kept: convs}); err != nil {
		t.Fatal(err)
	}
	return l
}

func client(t *testing.T, srv *llmtest.Server) *llm.Client {
	t.Helper()
	c, err := llm.New(llm.Options{Endpoints: []llm.Endpoint{{Name: "ep", BaseURL: srv.URL, Model: "m", Timeout: 5 * time.Second, MaxAttempts: 2}}, Cache: llm.NewMemCache()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// reference returns the GSM8K answer of the instance whose first shard
// opens the conversation req carries.
func reference(t *testing.T, convs []*conv.Conversation, first string) string {
	for _, c := range convs {
		if c.Messages[0].Content == first {
			in, _ := grade.ParseInstance(c.Meta)
			_, ref, _ := strings.Cut(in.Answer, "####")
			return strings.TrimSpace(ref)
		}
	}
	t.Errorf("no instance opens with %q", first)
	return ""
}

func firstUser(r llmtest.ChatRequest) string {
	for _, m := range r.Messages {
		if m.Role == "user" {
			return m.Content
		}
	}
	return ""
}

func TestSimulateGradeCheckDerive(t *testing.T) {
	ctx := context.Background()
	convs := loadSample(t, grade.TaskMath)
	if len(convs) != 5 {
		t.Fatalf("%d math records in the sample, want 5", len(convs))
	}
	// A summary record is simulated but not graded.
	convs = append(convs, loadSample(t, "summary")[0])
	l := openRun(t, convs)
	right := convs[0].Messages[0].Content   // always answered right
	flagged := convs[1].Messages[0].Content // the check flags it

	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{SystemContains: "You play a user", Func: func(r llmtest.ChatRequest) llmtest.Reply {
		_, piece, _ := strings.Cut(r.Last(), "Piece to give now:\n")
		return llmtest.Reply{Content: "so, " + piece}
	}})
	srv.Add(llmtest.Rule{SystemContains: "You check a simulated conversation", Func: func(r llmtest.ChatRequest) llmtest.Reply {
		// The checker sees what the paper's Prompt 7 shows: the task's
		// system message and the reference answer, besides the task and
		// the user's messages.
		for _, want := range []string{"Original task:\n", "The assistant's system message:\n", "Reference answer:\n", "The user's messages:\n(1) "} {
			if !strings.Contains(r.Last(), want) {
				t.Errorf("the check's request lacks %q:\n%s", want, r.Last())
			}
		}
		if strings.Contains(r.Last(), flagged) {
			return llmtest.Reply{Content: `{"sufficient": false, "reason": "a number changed"}`}
		}
		return llmtest.Reply{Content: "```json\n{\"sufficient\": true, \"reason\": \"all there\"}\n```"}
	}})
	srv.Add(llmtest.Rule{SystemContains: "grade-school math", Func: func(r llmtest.ChatRequest) llmtest.Reply {
		if firstUser(r) == right {
			return llmtest.Reply{Content: "Working...\n" + grade.AnswerPrefix + " " + reference(t, convs, right)}
		}
		return llmtest.Reply{Content: "Hmm.\n" + grade.AnswerPrefix + " -1"}
	}})
	c := client(t, srv)
	sim, err := simulate.New(c, simulate.Options{Replicates: 2, Mode: simulate.ModeModel, Grader: grade.New(grade.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := pipeline.Run(ctx, l, sim, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != 12 || sum.Failed != 0 {
		t.Fatalf("simulate: %+v; want 12 tasks done", sum)
	}
	// Each replicate of an instance with k shards asks the respondent k
	// times and the user simulator k-1 times (the first shard is sent as
	// written).
	want := 0
	for _, cv := range convs {
		want += 2 * (2*cv.UserTurns() - 1)
	}
	if n := srv.Count(); n != want {
		t.Errorf("%d calls, want %d", n, want)
	}
	for _, cv := range convs {
		trs, err := simulate.Stored(ctx, l, sim, cv.ID)
		if err != nil {
			t.Fatal(err)
		}
		for i, tr := range trs {
			if tr.Replicate != i+1 || len(tr.Messages) != 2*cv.UserTurns() || len(tr.Shards) != cv.UserTurns() {
				t.Fatalf("%s r%d: replicate %d, %d messages, %d shards", cv.ID, i+1, tr.Replicate, len(tr.Messages), len(tr.Shards))
			}
			if tr.Messages[0].Content != cv.Messages[0].Content {
				t.Errorf("%s: first user turn %q, want the first shard as written", cv.ID, tr.Messages[0].Content)
			}
			if got, want := tr.Messages[2].Content, "so, "+cv.Messages[1].Content; got != want {
				t.Errorf("%s: second user turn %q, want %q", cv.ID, got, want)
			}
			switch {
			case tr.Task == "summary":
				if tr.Grade == nil || tr.Grade.Status != grade.NotGraded {
					t.Errorf("%s: grade %+v, want not graded", cv.ID, tr.Grade)
				}
			case cv.Messages[0].Content == right:
				if tr.Grade == nil || tr.Grade.Status != grade.Pass {
					t.Errorf("%s: grade %+v, want pass", cv.ID, tr.Grade)
				}
			default:
				if !tr.Failed() {
					t.Errorf("%s: grade %+v, want fail", cv.ID, tr.Grade)
				}
			}
			if tr.Task == grade.TaskMath && !strings.Contains(tr.System, grade.AnswerPrefix) {
				t.Errorf("%s: the math prompt does not name the answer prefix: %q", cv.ID, tr.System)
			}
		}
	}

	// Resuming does nothing and calls nothing.
	before := srv.Count()
	sum, err = pipeline.Run(ctx, l, sim, pipeline.Options{})
	if err != nil || sum.Planned != 0 || srv.Count() != before {
		t.Fatalf("second run: %+v, %v, %d new calls", sum, err, srv.Count()-before)
	}

	check := simulate.NewFNCheck(c, l, sim, "", "")
	if err := pipeline.Barrier(ctx, l, sim, ledger.AllOrigins); err != nil {
		t.Fatal(err)
	}
	if _, err := pipeline.Run(ctx, l, check, pipeline.Options{}); err != nil {
		t.Fatal(err)
	}
	checks := srv.Count() - before
	if checks != 4 { // the four math instances that failed; not the passing one, not the summary
		t.Errorf("%d check calls, want 4", checks)
	}
	v, err := check.Stored(ctx, l, convs[1].ID)
	if err != nil || !v.Flagged() || v.Replicate != 1 || v.Reason != "a number changed" {
		t.Errorf("verdict on the flagged instance: %+v, %v", v, err)
	}
	v, err = check.Stored(ctx, l, convs[0].ID)
	if err != nil || v.Checked || v.Flagged() {
		t.Errorf("verdict on the passing instance: %+v, %v", v, err)
	}

	// The cap keeps the two most-failed per task; four math instances tie
	// at two failures, so the two earliest are kept.
	capped := &simulate.Pool{MinFailures: 1, MaxPerTask: 2}
	src := ledger.MustOrigins(ledger.OriginSource)
	if err := capped.Rank(ctx, l.In(src).EachPage, l, sim); err != nil {
		t.Fatal(err)
	}
	var kept []string
	l.In(src).EachPage(ctx, 100, func(page []ledger.Stored, _, _ int64) error {
		for _, s := range page {
			trs, _ := simulate.Stored(ctx, l, sim, s.Conv.ID)
			if capped.Selected(s.Seq, trs) {
				kept = append(kept, s.Conv.ID)
			}
		}
		return nil
	})
	if fmt.Sprint(kept) != fmt.Sprint([]string{convs[1].ID, convs[2].ID}) {
		t.Errorf("the cap kept %v, want %v", kept, []string{convs[1].ID, convs[2].ID})
	}

	// Every trace of each kept instance (TracesAll); the paper's one trace
	// is TestPoolReplaysOneTrace's.
	pool := &simulate.Pool{MinFailures: 2, Check: check, Traces: simulate.TracesAll}
	ds, err := pipeline.Derive(ctx, l, simulate.Origin, ledger.MustOrigins(ledger.OriginSource), simulate.Trajectories(l, sim, pool), pipeline.DeriveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 6 records: one passes (0 failures), one is flagged, the summary is
	// never failed: 3 instances × 2 replicates remain.
	if ds.Added != 6 {
		t.Fatalf("derived %d trajectories, want 6", ds.Added)
	}
	var ids []string
	err = l.In(ledger.MustOrigins(simulate.Origin)).EachPage(ctx, 100, func(page []ledger.Stored, _, _ int64) error {
		for _, s := range page {
			ids = append(ids, s.Conv.ID)
			in, err := grade.ParseInstance(s.Conv.Meta)
			if err != nil || in.Task != grade.TaskMath || in.Answer == "" {
				t.Errorf("%s: meta does not read as the instance: %+v %v", s.Conv.ID, in, err)
			}
			if s.Conv.System == "" || s.Conv.Messages[len(s.Conv.Messages)-1].Role != conv.Assistant {
				t.Errorf("%s: not a trajectory: %+v", s.Conv.ID, s.Conv)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantIDs := fmt.Sprint([]string{
		simulate.TrajectoryID(convs[2].ID, 1), simulate.TrajectoryID(convs[2].ID, 2),
		simulate.TrajectoryID(convs[3].ID, 1), simulate.TrajectoryID(convs[3].ID, 2),
		simulate.TrajectoryID(convs[4].ID, 1), simulate.TrajectoryID(convs[4].ID, 2),
	})
	if fmt.Sprint(ids) != wantIDs {
		t.Errorf("derived %v, want %v", ids, wantIDs)
	}
}

func TestVerbatimCallsNoUserModel(t *testing.T) {
	ctx := context.Background()
	convs := loadSample(t, grade.TaskDatabase)[:2]
	l := openRun(t, convs)
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{SystemContains: "You play a user", Reply: llmtest.Reply{Content: "should not be asked"}})
	srv.Add(llmtest.Rule{SystemContains: "fenced code block marked sql", Func: func(r llmtest.ChatRequest) llmtest.Reply {
		if !strings.Contains(r.System(), "CREATE TABLE") {
			t.Errorf("the database prompt lacks the schema")
		}
		return llmtest.Reply{Content: "```sql\nSELECT 1\n```"}
	}})
	srv.Add(llmtest.Rule{LastContains: "", Fault: llmtest.Fault{Kind: llmtest.Status, Status: 400, Message: "unexpected"}})
	sim, err := simulate.New(client(t, srv), simulate.Options{Mode: simulate.ModeVerbatim})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := pipeline.Run(ctx, l, sim, pipeline.Options{})
	if err != nil || sum.Done != 2 {
		t.Fatalf("%+v %v", sum, err)
	}
	for _, cv := range convs {
		trs, err := simulate.Stored(ctx, l, sim, cv.ID)
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < cv.UserTurns(); k++ {
			if trs[0].Messages[2*k].Content != cv.Messages[k].Content {
				t.Errorf("%s turn %d: %q, want the shard as written", cv.ID, k+1, trs[0].Messages[2*k].Content)
			}
		}
		if trs[0].Grade != nil {
			t.Errorf("graded without a grader: %+v", trs[0].Grade)
		}
	}
}

func TestRejectedAnswerFailsTheReplicateOnly(t *testing.T) {
	ctx := context.Background()
	convs := loadSample(t, grade.TaskMath)[:2]
	l := openRun(t, convs)
	srv := llmtest.New(t, llmtest.Options{})
	bad := convs[0].Messages[0].Content
	srv.Add(llmtest.Rule{Match: func(r llmtest.ChatRequest) bool { return firstUser(r) == bad }, Fault: llmtest.Fault{Kind: llmtest.Status, Status: 400, Message: "context too long"}})
	srv.Add(llmtest.Rule{Reply: llmtest.Reply{Content: grade.AnswerPrefix + " 3"}})
	sim, _ := simulate.New(client(t, srv), simulate.Options{Mode: simulate.ModeVerbatim})
	sum, err := pipeline.Run(ctx, l, sim, pipeline.Options{})
	if err != nil || sum.Done != 1 || sum.Failed != 1 {
		t.Fatalf("%+v %v; want one done, one failed", sum, err)
	}
	if err := pipeline.Barrier(ctx, l, sim, ledger.AllOrigins); err == nil {
		t.Error("the barrier let a failed simulation through")
	}
	if _, err := simulate.Stored(ctx, l, sim, convs[0].ID); err == nil {
		t.Error("Stored read a failed trajectory")
	}
}

// TestPoolReplaysOneTrace: the paper replays one saved baseline trace per
// instance, the first that failed (the one the false-negative check reads);
// an instance the baseline never failed keeps its first; TracesAll keeps
// every one.
func TestPoolReplaysOneTrace(t *testing.T) {
	tr := func(r int, status grade.Status) simulate.Trajectory {
		return simulate.Trajectory{Replicate: r, Grade: &grade.Result{Status: status}}
	}
	reps := func(trs []simulate.Trajectory) []int {
		var out []int
		for _, t := range trs {
			out = append(out, t.Replicate)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		traces string
		trs    []simulate.Trajectory
		want   []int
	}{
		{"first failing", simulate.TracesOne, []simulate.Trajectory{tr(1, grade.Pass), tr(2, grade.Fail), tr(3, grade.Fail)}, []int{2}},
		{"default is one", "", []simulate.Trajectory{tr(1, grade.Fail), tr(2, grade.Fail)}, []int{1}},
		{"never failed", simulate.TracesOne, []simulate.Trajectory{tr(1, grade.Pass), tr(2, grade.Pass)}, []int{1}},
		{"all", simulate.TracesAll, []simulate.Trajectory{tr(1, grade.Pass), tr(2, grade.Fail)}, []int{1, 2}},
		{"none", simulate.TracesOne, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &simulate.Pool{Traces: tc.traces}
			if got := reps(p.Replayed(tc.trs)); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("replayed replicates %v, want %v", got, tc.want)
			}
		})
	}
}

// TestLiCModeChoosesShards: in mode lic the simulator chooses which piece
// to give (here: none at first, then the last one left, down to piece 2),
// every piece is given once, and a conversation ends at its first correct
// answer, as LiC's simulator plays it.
func TestLiCModeChoosesShards(t *testing.T) {
	ctx := context.Background()
	convs := loadSample(t, grade.TaskMath)
	l := openRun(t, convs)
	right := convs[0].Messages[0].Content // answered right from the third user message on
	users := func(r llmtest.ChatRequest, from string) int {
		_, after, _ := strings.Cut(r.Last(), from)
		return strings.Count(after, "[user]")
	}
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{SystemContains: "numbered pieces", Func: func(r llmtest.ChatRequest) llmtest.Reply {
		if users(r, "Conversation so far:") == 1 {
			return llmtest.Reply{Content: `{"message": "dunno, does it matter", "piece": 0}`}
		}
		_, left, _ := strings.Cut(r.Last(), "Pieces you have not given yet:\n")
		var last string
		for _, line := range strings.Split(strings.TrimSpace(left), "\n") {
			last = line
		}
		var n int
		fmt.Sscanf(last, "(%d)", &n)
		return llmtest.Reply{Content: fmt.Sprintf(`{"message": "also piece %d", "piece": %d}`, n, n)}
	}})
	srv.Add(llmtest.Rule{SystemContains: "grade-school math", Func: func(r llmtest.ChatRequest) llmtest.Reply {
		n := 0
		for _, m := range r.Messages {
			if m.Role == "user" {
				n++
			}
		}
		if firstUser(r) == right && n >= 3 {
			return llmtest.Reply{Content: grade.AnswerPrefix + " " + reference(t, convs, right)}
		}
		return llmtest.Reply{Content: grade.AnswerPrefix + " -1"}
	}})
	sim, err := simulate.New(client(t, srv), simulate.Options{Mode: simulate.ModeLiC, Grader: grade.New(grade.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := pipeline.Run(ctx, l, sim, pipeline.Options{}); err != nil || sum.Done != int64(len(convs)) || sum.Failed != 0 {
		t.Fatalf("%+v %v", sum, err)
	}
	for _, cv := range convs {
		trs, err := simulate.Stored(ctx, l, sim, cv.ID)
		if err != nil {
			t.Fatal(err)
		}
		tr, k := trs[0], cv.UserTurns()
		want := []int{1, 0}
		for p := k; p >= 2; p-- {
			want = append(want, p)
		}
		if cv.Messages[0].Content == right {
			want = want[:3] // right at the third message: the conversation ends there
			if tr.Grade == nil || tr.Grade.Status != grade.Pass {
				t.Errorf("%s: grade %+v, want pass", cv.ID, tr.Grade)
			}
		} else if !tr.Failed() {
			t.Errorf("%s: grade %+v, want fail", cv.ID, tr.Grade)
		}
		if fmt.Sprint(tr.Revealed) != fmt.Sprint(want) || len(tr.Messages) != 2*len(want) || len(tr.Shards) != k {
			t.Errorf("%s: revealed %v in %d messages (%d shards), want %v", cv.ID, tr.Revealed, len(tr.Messages), len(tr.Shards), want)
		}
		if tr.Messages[0].Content != cv.Messages[0].Content || tr.Messages[2].Content != "dunno, does it matter" {
			t.Errorf("%s: user turns %q, %q", cv.ID, tr.Messages[0].Content, tr.Messages[2].Content)
		}
	}
	// A user_sim template is for mode model; mode lic refuses it.
	if _, err := simulate.New(client(t, srv), simulate.Options{Mode: simulate.ModeLiC, Prompts: simulate.Prompts{UserSim: parsed(t, "user_sim", "Say: {{.Piece}}")}}); err == nil {
		t.Error("mode lic accepted a user_sim template")
	}
}

// lic.task_replicates: a task with fewer replicates than the others has
// its extra ones recorded as unused, with no call, and left out of what
// the pool reads; lowering a count later leaves out replicates already
// simulated past it.
func TestTaskReplicates(t *testing.T) {
	ctx := context.Background()
	db, math := loadSample(t, grade.TaskDatabase)[:2], loadSample(t, grade.TaskMath)[:2]
	convs := append(append([]*conv.Conversation{}, db...), math...)
	l := openRun(t, convs)
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{LastContains: "", Reply: llmtest.Reply{Content: "an answer"}})
	sim, err := simulate.New(client(t, srv), simulate.Options{Mode: simulate.ModeVerbatim, Replicates: 3, TaskReplicates: map[string]int{grade.TaskDatabase: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(sim.Variants()) != 3 || sim.ReplicatesOf(grade.TaskDatabase) != 1 || sim.ReplicatesOf(grade.TaskMath) != 3 {
		t.Fatalf("%d variants; database %d, math %d replicates", len(sim.Variants()), sim.ReplicatesOf(grade.TaskDatabase), sim.ReplicatesOf(grade.TaskMath))
	}
	if _, err := pipeline.Run(ctx, l, sim, pipeline.Options{}); err != nil {
		t.Fatal(err)
	}
	// Verbatim: one respondent call per user turn and replicate.
	want := 0
	for _, cv := range db {
		want += cv.UserTurns()
	}
	for _, cv := range math {
		want += 3 * cv.UserTurns()
	}
	if n := srv.Count(); n != want {
		t.Errorf("%d calls, want %d (database once, math three times)", n, want)
	}
	count := func(s *simulate.Stage, cv *conv.Conversation) int {
		trs, err := simulate.Stored(ctx, l, s, cv.ID)
		if err != nil {
			t.Fatal(err)
		}
		for i, tr := range trs {
			if tr.Replicate != i+1 || tr.Unused != "" || len(tr.Messages) == 0 {
				t.Errorf("%s: trajectory %d is replicate %d (unused %q, %d messages)", cv.ID, i, tr.Replicate, tr.Unused, len(tr.Messages))
			}
		}
		return len(trs)
	}
	for _, cv := range db {
		if n := count(sim, cv); n != 1 {
			t.Errorf("%s (database): %d trajectories read, want 1", cv.ID, n)
		}
	}
	for _, cv := range math {
		if n := count(sim, cv); n != 3 {
			t.Errorf("%s (math): %d trajectories read, want 3", cv.ID, n)
		}
	}
	lowered, err := simulate.New(client(t, srv), simulate.Options{Mode: simulate.ModeVerbatim, Replicates: 3, TaskReplicates: map[string]int{grade.TaskDatabase: 1, grade.TaskMath: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(lowered, math[0]); n != 2 {
		t.Errorf("math with its count lowered to 2: %d trajectories read", n)
	}
	if _, err := simulate.New(nil, simulate.Options{Replicates: 3, TaskReplicates: map[string]int{grade.TaskCode: 0}}); err == nil {
		t.Error("a task with no replicates was accepted")
	}
}
