package run_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/record"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/run/convert"
	"github.com/ac3/ac3/stages/curate/memory"
	"github.com/ac3/ac3/stages/curate/policy"
)

// TestWriteFailed: failed units recorded in the run end a command with
// status 2 (failing) and a line per stage variant, until accepted; a blocked
// run cannot be accepted, as running again does not help.
func TestWriteFailed(t *testing.T) {
	failed := []run.StageFailures{
		{Stage: "classify", Variant: "llm", Tasks: 3, Units: 4, Groups: []ledger.FailureGroup{
			{Reason: "bad answer", Units: 3, Example: ledger.FailedUnit{ConvID: "c1", Turn: 2}},
			{Reason: "timeout", Units: 1},
		}},
		{Stage: "curate", Variant: "gated-reset", Tasks: 1, Units: 1},
	}
	tests := []struct {
		name     string
		res      run.Result
		accepted bool
		failing  bool
		want     []string
	}{
		{name: "none", res: run.Result{}, accepted: false, failing: false},
		{
			name: "failed", res: run.Result{Failed: failed}, failing: true,
			want: []string{
				`failed: classify/llm: 3 tasks, 4 units; 3 with "bad answer", e.g. conversation c1 turn 2 (and 1 other reasons: 'ac3 status --db r.db')`,
				"failed: curate/gated-reset: 1 tasks, 1 units\n",
				"4 tasks have failed units recorded in the run (classify/llm 3, curate/gated-reset 1)",
				"'ac3 retry --db r.db --stage classify' and 'ac3 retry --db r.db --stage curate' queues them again for the next run of this command; --accept-failed accepts them",
			},
		},
		{
			name: "accepted", res: run.Result{Failed: failed}, accepted: true, failing: false,
			want: []string{"; accepted (--accept-failed): they stay failed until 'ac3 retry --db r.db --stage classify'"},
		},
		{
			name: "blocked", res: run.Result{Failed: failed[1:], Blocked: "respond: blocked"}, accepted: true, failing: true,
			want: []string{"respond: blocked\n", "--accept-failed accepts them"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if got := tc.res.WriteFailed(&out, "r.db", tc.accepted); got != tc.failing {
				t.Errorf("failing = %v, want %v", got, tc.failing)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			if len(tc.want) == 0 && out.Len() > 0 {
				t.Errorf("wrote %q, want nothing", out.String())
			}
		})
	}
}

// TestReportFile: the file to open is the HTML report when there is one.
func TestReportFile(t *testing.T) {
	for _, tc := range []struct {
		reports []string
		want    string
	}{
		{nil, ""},
		{[]string{"out/report.md"}, "out/report.md"},
		{[]string{"out/report.json", "out/report.html", "out/report.md"}, "out/report.html"},
	} {
		if got := (run.Result{Reports: tc.reports}).ReportFile(); got != tc.want {
			t.Errorf("ReportFile(%v) = %q, want %q", tc.reports, got, tc.want)
		}
	}
}

// TestPolicyFitText: the fit's lines end with the curate command that uses
// it, and say when the turn-type features were zero.
func TestPolicyFitText(t *testing.T) {
	fit := run.PolicyFit{Policy: policy.Policy{
		Features: []string{"asst_tokens"}, Weights: []float64{0.1, -0.25}, N: 40,
		Fit: &policy.FitReport{Wins: 25, Losses: 15, Ties: "losses", Classes: "balanced", Folds: 3, Metric: "f1", FoldsBy: "turn", Tau: 0.5},
	}}
	var out bytes.Buffer
	fit.WriteText(&out)
	for _, want := range []string{"fitted on 40 judged turns (fc won 25, lost 15, tied 0; ties as losses;",
		"  asst_tokens      -0.250\n", "(no classify stage in this run", "--adaptive-policy scored --tau 0.500 [--lambda L]\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestLearningText: one line for each way 'ac3 memory learn' ends.
func TestLearningText(t *testing.T) {
	for _, tc := range []struct {
		res  run.Learning
		want string
	}{
		{run.Learning{Skipped: "no endpoint"}, "memory learn: skipped: no endpoint\n"},
		{run.Learning{LearnResult: memory.LearnResult{Reused: true, Memory: memory.Offline{Hash: "h1", Conversations: 3}}}, "already has cheatsheet h1 learned on its first 3 conversations"},
		{run.Learning{LearnResult: memory.LearnResult{Stopped: errors.New("budget"), Learned: 2}}, "stopped at conversation 3: budget; nothing stored"},
		{run.Learning{LearnResult: memory.LearnResult{Learned: 4, Calls: 9, Memory: memory.Offline{Hash: "h2", Cheatsheet: "two words"}}}, "cheatsheet h2 (2 words) learned on 4 conversations"},
	} {
		var out bytes.Buffer
		tc.res.WriteText(&out)
		if !strings.Contains(out.String(), tc.want) || strings.Count(out.String(), "\n") != 1 {
			t.Errorf("got %q, want one line with %q", out.String(), tc.want)
		}
	}
}

// TestPollutionTargets: the names --on and stages.pollution.on share.
func TestPollutionTargets(t *testing.T) {
	for _, tc := range []struct {
		on                 []string
		dataset, generated bool
		unknown            string
	}{
		{nil, false, false, ""},
		{[]string{"dataset"}, true, false, ""},
		{[]string{"responses"}, false, true, ""},
		{[]string{"dataset", "generated"}, true, true, ""},
		{[]string{"dataset", "everything", "responses"}, true, false, "everything"},
	} {
		d, g, u := run.PollutionTargets(tc.on)
		if d != tc.dataset || g != tc.generated || u != tc.unknown {
			t.Errorf("PollutionTargets(%v) = %v, %v, %q; want %v, %v, %q", tc.on, d, g, u, tc.dataset, tc.generated, tc.unknown)
		}
	}
}

// TestSummaryTexts: the closing lines of convert, merge and batch import.
func TestSummaryTexts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(*bytes.Buffer)
		want  string
	}{
		{"convert", func(b *bytes.Buffer) {
			run.WriteConversion(b, "out.parquet", convert.Stats{Records: 5, Kept: 2,
				Dropped: map[string]int64{"min_turns": 2}, Bad: map[record.Reason]int64{"bad json": 1}})
		}, "read 5 records: wrote 2 conversations to out.parquet\ndropped by filters: 2\n  min_turns                    2\nbad records skipped: 1\n  bad json                     1\n"},
		{"merge", func(b *bytes.Buffer) {
			run.WriteMerged(b, "m.db", ledger.MergeReport{Shards: 2, Conversations: 9, Units: 30, Calls: 4, CrossDuplicates: 1})
		}, "merged 2 shards into m.db: 9 conversations, 30 units, 4 model calls\ndropped 1 conversations as duplicates of earlier ones in other shards (dedupe); their model calls stay in the spend\nnext: run the same config (or report/export) on the merged file for the report and exports\n"},
		{"batch import", func(b *bytes.Buffer) {
			run.BatchImport{Imported: 3, Repeated: 1, Unknown: 2, UnknownIDs: []string{"a", "b"}}.WriteText(b)
		}, "imported 3 answers (1 already imported, 0 error lines left queued, 0 malformed lines skipped)\nskipped 2 lines whose custom_id this run is not waiting for, e.g. a, b\n"},
	} {
		var out bytes.Buffer
		tc.write(&out)
		if out.String() != tc.want {
			t.Errorf("%s:\ngot  %q\nwant %q", tc.name, out.String(), tc.want)
		}
	}
}

// The closing lines of 'ac3 run' point to the report and to 'ac3 view';
// a run stopped by an error other than failed units says neither.
func TestWriteDone(t *testing.T) {
	tests := []struct {
		name string
		res  run.Result
		err  error
		want string
	}{
		{"report", run.Result{Reports: []string{"out/report.md", "out/report.html"}}, nil,
			"== done; the report is out/report.html, and 'ac3 status --db r.db' shows the run\n" +
				"browse every turn, answer and verdict with 'ac3 view --db r.db'; report.html links into it\n"},
		{"markdown only", run.Result{Reports: []string{"out/report.md"}}, nil,
			"== done; the report is out/report.md, and 'ac3 status --db r.db' shows the run\n" +
				"browse every turn, answer and verdict with 'ac3 view --db r.db'\n"},
		{"no report", run.Result{}, nil,
			"== done; 'ac3 status --db r.db' shows the run\nbrowse every turn, answer and verdict with 'ac3 view --db r.db'\n"},
		{"stopped", run.Result{Reports: []string{"out/report.html"}}, errors.New("reading input: boom"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			tc.res.WriteDone(&out, "r.db", tc.err)
			if out.String() != tc.want {
				t.Errorf("got\n%q\nwant\n%q", out.String(), tc.want)
			}
		})
	}
}
