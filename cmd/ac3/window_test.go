package main

import (
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

// TestWindowBoundsRequestsInFlight: --window caps what a model stage has
// in flight below the endpoint's concurrency (8 by default); without it the
// derived window lets several requests out at once.
func TestWindowBoundsRequestsInFlight(t *testing.T) {
	slow := func(r llmtest.ChatRequest) llmtest.Reply {
		rep := fakeAnnotator(r)
		rep.Latency = 30 * time.Millisecond
		return rep
	}
	tests := []struct {
		name   string
		window []string
		check  func(maxInFlight int) bool
		want   string
	}{
		{"window 1", []string{"--window", "1"}, func(n int) bool { return n == 1 }, "exactly 1"},
		{"derived", nil, func(n int) bool { return n > 1 }, "more than 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := ingestedRun(t)
			srv := llmtest.New(t, llmtest.Options{})
			srv.Add(llmtest.Rule{Func: slow})
			vars := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "k", "OPENAI_MODEL": "m"}
			args := append([]string{"annotate", "--db", db, "--stages", "classify", "--annotator", "llm"}, tc.window...)
			out, errs, err := annotateEnvRun(t, vars, args...)
			if err != nil {
				t.Fatalf("%v\n%s\n%s", err, out, errs)
			}
			if n := srv.MaxInFlight(); !tc.check(n) {
				t.Errorf("%d requests in flight at most over %d calls, want %s", n, srv.Count(), tc.want)
			}
		})
	}
}

func TestWindowAndWorkersRejectNegatives(t *testing.T) {
	db := ingestedRun(t)
	for _, args := range [][]string{
		{"annotate", "--db", db, "--window", "-1"},
		{"curate", "--db", db, "--window", "-3"},
		{"respond", "--db", db, "--window", "-1"},
		{"judge", "--db", db, "--window", "-1"},
		{"annotate", "--db", db, "--workers", "-1"},
	} {
		flag := args[3]
		_, _, err := runApp(t, args...)
		if err == nil || !strings.Contains(err.Error(), flag+" "+args[4]) {
			t.Errorf("ac3 %s: err = %v, want one naming %s", strings.Join(args, " "), err, flag)
		}
	}
}

func TestHelpSaysWhatEachKnobLimits(t *testing.T) {
	for _, cmd := range []string{"run", "annotate", "curate", "respond", "judge"} {
		out := mustRun(t, cmd, "--help")
		if !strings.Contains(out, "--window") || !strings.Contains(out, "model calls:") {
			t.Errorf("ac3 %s --help does not document --window", cmd)
		}
		if cmd == "run" || cmd == "annotate" || cmd == "curate" {
			if !strings.Contains(out, "CPU:") {
				t.Errorf("ac3 %s --help does not say --workers is about the CPU", cmd)
			}
		}
	}
	if out := mustRun(t, "run", "--help"); !strings.Contains(out, "patience") || !strings.Contains(out, "min_concurrency") {
		t.Error("ac3 run --help does not document limits.patience and limits.min_concurrency")
	}
}
