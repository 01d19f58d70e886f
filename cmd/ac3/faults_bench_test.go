package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/run"
)

// faultLatency is how long the scripted endpoint takes to answer, as a
// model would: the run's wall time is then set by its calls, not by the
// machine.
const faultLatency = time.Second

// BenchmarkFaults runs the end-to-end config (fixtures/configs/e2e.yaml on
// the bundled WildChat sample, concurrency 8) twice against the scripted
// endpoint answering in faultLatency: once fault-free, once with 30% of
// arrivals answered 429 with Retry-After: 1 and 10% answered 500, drawn per
// request and attempt from a fixed seed. It prints both wall times, their
// ratio and the failed units of the faulted run. Targets (issue 9): a ratio
// of at most 3 and no failed unit.
//
//	go test -run '^$' -bench Faults -benchtime 1x -timeout 30m ./cmd/ac3/
func BenchmarkFaults(b *testing.B) {
	fixtures, err := filepath.Abs("../../fixtures/wildchat/wildchat-1m-sample10.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		dir := b.TempDir()
		clean := startScriptedWith(b, llmtest.Options{Latency: faultLatency})
		cleanWall, cleanFailed := faultRun(b, dir, "clean", fixtures, clean)

		faulty := startScriptedWith(b, llmtest.Options{Latency: faultLatency, Chaos: &llmtest.Chaos{Seed: 9, Faults: []llmtest.ChaosFault{
			{P: 0.3, Fault: llmtest.Fault{Kind: llmtest.Status, Status: 429, Headers: map[string]string{"Retry-After": "1"}}},
			{P: 0.1, Fault: llmtest.Fault{Kind: llmtest.Status, Status: 500}},
		}}})
		faultyWall, failed := faultRun(b, dir, "faulty", fixtures, faulty)

		var limited, errors int
		for _, c := range faulty.Calls() {
			switch c.Status {
			case 429:
				limited++
			case 500:
				errors++
			}
		}
		ratio := faultyWall.Seconds() / cleanWall.Seconds()
		b.ReportMetric(cleanWall.Seconds(), "clean_s")
		b.ReportMetric(faultyWall.Seconds(), "faulty_s")
		b.ReportMetric(ratio, "ratio")
		b.ReportMetric(float64(failed), "failed_units")
		fmt.Printf("\nthe e2e config at concurrency 8, answers in %v\n", faultLatency)
		fmt.Printf("fault-free:                 %7.1f s, %d requests, %d failed units\n", cleanWall.Seconds(), clean.Count(), cleanFailed)
		fmt.Printf("30%% 429 (Retry-After 1 s), 10%% 500: %7.1f s, %d requests (%d answered 429, %d answered 500), %d failed units\n",
			faultyWall.Seconds(), faulty.Count(), limited, errors, failed)
		fmt.Printf("ratio %.2f (target <= 3), failed units %d (target 0)\n", ratio, failed)
		if ratio > 3 {
			b.Errorf("the faulted run took %.2f× the fault-free one, want at most 3×", ratio)
		}
		if failed > 0 || cleanFailed > 0 {
			b.Errorf("%d units failed under faults (%d without), want none", failed, cleanFailed)
		}
	}
}

// faultRun runs `ac3 run` in-process on the e2e config against srv and
// returns its wall time and the units that failed (tasks never attempted
// count too).
func faultRun(b *testing.B, dir, name, in string, srv *llmtest.Server) (time.Duration, int64) {
	b.Helper()
	cfg := chaosConfig(b, dir, name, in)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	getenv := func(k string) string {
		if k == "AC3_E2E_BASE_URL" {
			return srv.URL
		}
		return ""
	}
	app := newApp(&env{stop: make(chan struct{}), stdout: &out, stderr: &out, getenv: getenv})
	start := time.Now()
	err := app.RunContext(ctx, []string{"ac3", "run", "--config", cfg})
	wall := time.Since(start)
	if err != nil && run.ExitCode(err) != run.ExitFailed {
		b.Fatalf("%s run: %v\n%s", name, err, out.String())
	}
	var st ledger.Status
	var sout, serr bytes.Buffer
	sapp := newApp(&env{stop: make(chan struct{}), stdout: &sout, stderr: &serr, getenv: func(string) string { return "" }})
	if err := sapp.RunContext(ctx, []string{"ac3", "status", "--db", filepath.Join(dir, name, "e2e.db"), "--json"}); err != nil {
		b.Fatalf("status: %v\n%s", err, serr.String())
	}
	if err := json.Unmarshal(sout.Bytes(), &st); err != nil {
		b.Fatal(err)
	}
	var failed int64
	for _, s := range st.Stages {
		failed += s.UnitsFailed + s.Pending
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "%s run:\n%s\n", name, out.String())
	}
	return wall, failed
}
