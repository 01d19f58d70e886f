package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

// TestConcurrencyBoundsRequestsInFlight: the endpoint's limits.concurrency
// is the knob for model calls: at 1, a model stage has exactly one request
// in flight; at the default, several.
func TestConcurrencyBoundsRequestsInFlight(t *testing.T) {
	slow := func(r llmtest.ChatRequest) llmtest.Reply {
		rep := fakeAnnotator(r)
		rep.Latency = 30 * time.Millisecond
		return rep
	}
	tests := []struct {
		name   string
		limits string
		check  func(maxInFlight int) bool
		want   string
	}{
		{"concurrency 1", "limits: {concurrency: 1}", func(n int) bool { return n == 1 }, "exactly 1"},
		{"default", "", func(n int) bool { return n > 1 }, "more than 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := ingestedRun(t)
			srv := llmtest.New(t, llmtest.Options{})
			srv.Add(llmtest.Rule{Func: slow})
			cfg := filepath.Join(t.TempDir(), "models.yaml")
			body := fmt.Sprintf("run: {db: %s}\nendpoints:\n  e: {base_url: %q, %s}\nmodels:\n  m: {endpoint: e}\nroles:\n  annotator: {model: m}\n", db, srv.URL, tc.limits)
			if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			out, errs, err := annotateEnvRun(t, nil, "annotate", "--db", db, "--config", cfg, "--stages", "classify", "--annotator", "llm")
			if err != nil {
				t.Fatalf("%v\n%s\n%s", err, out, errs)
			}
			if n := srv.MaxInFlight(); !tc.check(n) {
				t.Errorf("%d requests in flight at most over %d calls, want %s", n, srv.Count(), tc.want)
			}
		})
	}
}

func TestWorkersRejectNegatives(t *testing.T) {
	db := ingestedRun(t)
	for _, args := range [][]string{
		{"annotate", "--db", db, "--workers", "-1"},
		{"curate", "--db", db, "--workers", "-3"},
	} {
		_, _, err := runApp(t, args...)
		if err == nil || !strings.Contains(err.Error(), "--workers "+args[4]) {
			t.Errorf("ac3 %s: err = %v, want one naming --workers", strings.Join(args, " "), err)
		}
	}
}

// TestOneKnobEach: --workers is the CPU knob where rules run; model
// stages have no knob of their own beside the endpoints' limits, and the
// settings that were gone say where the knob is.
func TestOneKnobEach(t *testing.T) {
	for _, cmd := range []string{"run", "annotate", "curate", "respond", "judge"} {
		out := mustRun(t, cmd, "--help")
		if strings.Contains(out, "--window") || strings.Contains(out, "--parallel") {
			t.Errorf("ac3 %s --help still offers --window or --parallel", cmd)
		}
		hasWorkers := strings.Contains(out, "--workers")
		if want := cmd == "run" || cmd == "annotate" || cmd == "curate"; hasWorkers != want {
			t.Errorf("ac3 %s --help: --workers offered %v, want %v", cmd, hasWorkers, want)
		}
		if hasWorkers && !strings.Contains(out, "CPU:") {
			t.Errorf("ac3 %s --help does not say --workers is about the CPU", cmd)
		}
	}
	if out := mustRun(t, "run", "--help"); !strings.Contains(out, "patience") || !strings.Contains(out, "min_concurrency") {
		t.Error("ac3 run --help does not document limits.patience and limits.min_concurrency")
	}
	if _, _, err := runApp(t, "judge", "--db", filepath.Join(t.TempDir(), "x.db"), "--parallel", "2"); err == nil {
		t.Error("judge --parallel was accepted")
	}
}
