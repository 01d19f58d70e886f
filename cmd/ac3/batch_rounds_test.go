package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/llm/batch"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

// e2eBatchConfig writes the e2e config into dir with extra appended (a
// batch: section), for tests and benchmarks alike.
func e2eBatchConfig(tb testing.TB, dir, extra string) string {
	tb.Helper()
	raw, err := os.ReadFile("../../fixtures/configs/e2e.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	text := strings.ReplaceAll(string(raw), "../../runs/", dir+"/")
	fixtures, _ := filepath.Abs("../../fixtures")
	text = strings.ReplaceAll(text, "../wildchat/", fixtures+"/wildchat/") + "\n" + extra
	path := filepath.Join(dir, "e2e.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// runAppTB is runAppEnv for benchmarks.
func runAppTB(tb testing.TB, vars map[string]string, args ...string) (string, error) {
	tb.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	app := newApp(&env{stop: make(chan struct{}), stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }})
	err := app.RunContext(ctx, append([]string{"ac3"}, args...))
	return out.String() + errb.String(), err
}

// BenchmarkBatchRoundsE2E runs the e2e config with every role in batch mode
// against the scripted endpoint, whose batches finish one second after they
// are created (an API that answers fast), with the default poll interval
// (30 s). It reports the run's wall time, its batch rounds (from the run's
// closing line) and the batches submitted:
//
//	go test ./cmd/ac3 -run '^$' -bench BatchRoundsE2E -benchtime 1x
func BenchmarkBatchRoundsE2E(b *testing.B) {
	for range b.N {
		b.StopTimer()
		srv := startScriptedWith(b, llmtest.Options{Batch: llmtest.BatchOptions{Delay: time.Second}})
		dir := b.TempDir()
		cfg := e2eBatchConfig(b, dir, "")
		vars := map[string]string{"AC3_E2E_BASE_URL": srv.URL}
		b.StartTimer()
		start := time.Now()
		out, err := runAppTB(b, vars, "run", "--batch", "--config", cfg)
		wall := time.Since(start)
		if err != nil {
			b.Fatalf("ac3 run --batch: %v\n%s", err, out)
		}
		b.ReportMetric(wall.Seconds(), "wall-s/run")
		b.ReportMetric(float64(len(srv.Batches())), "batches/run")
		if m := roundsLine.FindStringSubmatch(out); m != nil {
			rounds, _ := strconv.Atoi(m[1])
			b.ReportMetric(float64(rounds), "rounds/run")
			b.Log(m[0])
		}
	}
}

// annotateStageOf names the annotation stage a request to fakeAnnotator
// comes from.
func annotateStageOf(r llmtest.ChatRequest) string {
	switch sys := r.System(); {
	case strings.Contains(sys, "session constraints"):
		return "constraints"
	case strings.Contains(sys, "context pollution"):
		return "pollution"
	}
	return "classify"
}

var (
	roundsLine   = regexp.MustCompile(`(?m)^batch rounds: (\d+) in all \((.*)\)$`)
	stageRounds  = regexp.MustCompile(`(classify|constraints|pollution) \(llm\) (\d+)`)
	meterLine    = regexp.MustCompile(`(?m)(classify|constraints|pollution) \(llm\): (\d+)/(\d+) conversations`)
	annotateArgs = []string{"--stages", "classify,constraints,pollution", "--annotator", "llm", "--batch"}
)

// submittedOnce checks, from the input files the test server was sent,
// that no request went into two batches, and returns how many requests
// were submitted.
func submittedOnce(t *testing.T, srv *llmtest.Server) int {
	t.Helper()
	seen := map[string]string{}
	for _, b := range srv.Batches() {
		in, ok := srv.FileContent(b.InputFile)
		if !ok {
			t.Fatalf("batch %s: no input file %s", b.ID, b.InputFile)
		}
		err := batch.ReadInput(bytes.NewReader(in), func(_ int, l batch.InputLine) error {
			if first, dup := seen[l.CustomID]; dup {
				t.Errorf("request %.12s submitted in batch %s and again in %s", l.CustomID, first, b.ID)
			}
			seen[l.CustomID] = b.ID
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return len(seen)
}

// TestBatchAnnotateStagesShareRounds: classify, constraints and pollution
// do not read each other's answers, so in batch mode their requests go
// into the same rounds: the first batch holds requests of all three, the
// command takes as many rounds as its longest stage (not their sum), says
// so in its closing lines, submits every request once, and its progress
// lines never count past the total.
func TestBatchAnnotateStagesShareRounds(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	db := ingestedRun(t)
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{Func: fakeAnnotator})
	vars := map[string]string{"AC3_TEST_KEY": "k"}
	args := append([]string{"annotate", "--db", db, "--config", endpointConfig(t, db, srv.URL, "")}, annotateArgs...)
	out, progress, err := annotateEnvRun(t, vars, args...)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, progress)
	}
	for _, st := range []string{"classify", "constraints", "pollution"} {
		if want := st + " (llm): 10 conversations done, 0 with failed units"; !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	m := roundsLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no closing line with the batch rounds:\n%s", out)
	}
	total, _ := strconv.Atoi(m[1])
	most, sum, stages := 0, 0, 0
	for _, sm := range stageRounds.FindAllStringSubmatch(m[2], -1) {
		n, _ := strconv.Atoi(sm[2])
		most, sum, stages = max(most, n), sum+n, stages+1
	}
	t.Log(m[0])
	if stages != 3 || total != most || total >= sum {
		t.Errorf("%q: want the three stages in %d shared rounds, fewer than the %d of one stage after another", m[0], most, sum)
	}
	if got := len(srv.Batches()); got != total {
		t.Errorf("%d batches in %d rounds; want one input file per round for the one model", got, total)
	}
	first := map[string]bool{}
	online := 0
	for _, c := range srv.Calls() {
		switch {
		case c.Batch == "":
			online++
		case c.Batch == srv.Batches()[0].ID:
			first[annotateStageOf(c.Request)] = true
		}
	}
	if online > 0 || len(first) != 3 {
		t.Errorf("%d requests sent online; the first batch has requests of %v, want all three stages", online, first)
	}
	if n := submittedOnce(t, srv); n != srv.Count() {
		t.Errorf("%d requests submitted, %d answered", n, srv.Count())
	}
	last := map[string][2]int{}
	for _, pm := range meterLine.FindAllStringSubmatch(progress, -1) {
		done, _ := strconv.Atoi(pm[2])
		of, _ := strconv.Atoi(pm[3])
		if done > of {
			t.Errorf("progress line counts past its total: %q", pm[0])
		}
		last[pm[1]] = [2]int{done, of}
	}
	for _, st := range []string{"classify", "constraints", "pollution"} {
		if last[st] != [2]int{10, 10} {
			t.Errorf("%s: last progress line at %v, want 10/10:\n%s", st, last[st], progress)
		}
	}
}

// TestBatchAnnotateKilledResubmitsNothing: kill -9 of an annotate command
// whose three stages share a round, as soon as its first input file is
// uploaded (the batch perhaps not created yet) or its first batch exists at
// the endpoint (created, perhaps not yet recorded, or being polled): the
// same command re-attaches to what was recorded and finishes, and no
// request is ever in two batches.
func TestBatchAnnotateKilledResubmitsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	tests := []struct {
		name  string
		ready func(*llmtest.Server) bool
	}{
		{"uploaded", func(srv *llmtest.Server) bool { return srv.Files() > 0 }},
		{"created", func(srv *llmtest.Server) bool { return len(srv.Batches()) > 0 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := ingestedRun(t)
			srv := llmtest.New(t, llmtest.Options{Batch: llmtest.BatchOptions{Polls: 1 << 30}})
			srv.Add(llmtest.Rule{Func: fakeAnnotator})
			env := []string{"AC3_TEST_KEY=k"}
			args := append([]string{"annotate", "--db", db, "--config", endpointConfig(t, db, srv.URL, "")}, annotateArgs...)
			signalled(t, env, syscall.SIGKILL, func() bool { return tc.ready(srv) }, args...)
			if n := len(srv.Batches()); n > 1 {
				t.Fatalf("%d batches before the kill, want at most 1", n)
			}
			srv.SetBatch(llmtest.BatchOptions{})
			res := runCLI(t, env, args...)
			if res.code != 0 {
				t.Fatalf("resumed run: status %d\n%s\n%s", res.code, res.stdout, res.stderr)
			}
			for _, st := range []string{"classify", "constraints", "pollution"} {
				if !strings.Contains(res.stdout, st+" (llm): 10 conversations done, 0 with failed units") {
					t.Errorf("resumed run did not finish %s:\n%s", st, res.stdout)
				}
			}
			if n := submittedOnce(t, srv); n != srv.Count() {
				t.Errorf("%d requests submitted, %d answered", n, srv.Count())
			}
		})
	}
}
