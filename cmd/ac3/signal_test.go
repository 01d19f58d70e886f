package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/run"
)

// signalBound is what the tests below allow between the signal and the
// end of the process. The promise is 5 s (run.StopGrace, then run.StopDeadline at
// the latest); the bound is wider so that a loaded machine cannot fail the
// test, and the real time is logged.
const signalBound = 20 * time.Second

// signalled starts ac3 with args, waits until ready reports that the
// process is at the point the test wants to interrupt (failing the test if
// it never gets there, or the process ends first), sends sig, and returns
// the process's exit status and output, and how long it took to end after
// the signal.
func signalled(t *testing.T, env []string, sig os.Signal, ready func() bool, args ...string) (code int, out string, took time.Duration) {
	t.Helper()
	cmd := ac3Process(env, args...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	defer cmd.Process.Kill() // only if the test fails before the end

	deadline := time.After(2 * time.Minute)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !ready() {
		select {
		case err := <-ended:
			t.Fatalf("the command ended (%v) before the point the signal must land at:\n%s", err, buf.String())
		case <-deadline:
			t.Fatalf("the command never got to the point the signal must land at:\n%s", buf.String())
		case <-tick.C:
		}
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var err error
	select {
	case err = <-ended:
	case <-time.After(signalBound):
		t.Fatalf("still running %v after %v:\n%s", signalBound, sig, buf.String())
	}
	took = time.Since(start)
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatal(err)
	}
	return code, buf.String(), took
}

var doneLine = regexp.MustCompile(`classify \(llm\): (\d+) conversations done, 0 with failed units, \d+ units \((\d+) conversations recorded before\)`)

// TestSignalEndsCommandWhileEndpointHangs: SIGTERM, and the first Ctrl-C,
// end a model stage within 5 s with status 3 while calls hang at the
// endpoint. The conversations whose answers came are committed, the hung
// calls stay pending, and the same command against a working endpoint
// does the rest without asking again for an answer it already has.
func TestSignalEndsCommandWhileEndpointHangs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			db := ingestedRun(t)
			srv := llmtest.New(t, llmtest.Options{})
			// Every third request hangs (for an hour: for ever, for this
			// test); the others are answered.
			srv.Add(llmtest.Rule{Name: "hang", When: llmtest.EveryK(3), Fault: llmtest.Fault{Kind: llmtest.Hang, Latency: time.Hour}})
			srv.Add(llmtest.Rule{Func: fakeAnnotator})
			args := []string{"annotate", "--db", db, "--stages", "classify", "--annotator", "llm"}
			env := func(s *llmtest.Server) []string {
				return []string{"OPENAI_BASE_URL=" + s.URL, "OPENAI_API_KEY=k", "OPENAI_MODEL=m"}
			}
			hung := func() bool {
				for _, c := range srv.Calls() {
					if c.Rule == "hang" && c.End.IsZero() {
						return true
					}
				}
				return false
			}
			code, out, took := signalled(t, env(srv), sig, hung, args...)
			t.Logf("%v: exit status %d %v after the signal (backstop used: %v)", sig, code, took.Round(time.Millisecond), strings.Contains(out, "still busy"))
			if code != run.ExitStopped {
				t.Fatalf("exit status %d, want %d:\n%s", code, run.ExitStopped, out)
			}
			if took > 5*time.Second {
				t.Errorf("ended %v after the signal; the promise is 5s", took)
			}
			answered := map[string]bool{}
			for _, c := range srv.Calls() {
				if c.Status == 200 {
					answered[c.Key] = true
				}
			}

			fixed := llmtest.New(t, llmtest.Options{})
			fixed.Add(llmtest.Rule{Func: fakeAnnotator})
			res := runCLI(t, env(fixed), args...)
			m := doneLine.FindStringSubmatch(res.stdout)
			if res.code != 0 || m == nil {
				t.Fatalf("resumed run: status %d\n%s\n%s", res.code, res.stdout, res.stderr)
			}
			now, before := atoi(t, m[1]), atoi(t, m[2])
			t.Logf("resumed: %d conversations done, %d committed before the signal", now, before)
			if now+before != 10 || now == 0 {
				t.Errorf("resumed run did %d conversations after %d recorded; want the 10 between them, some left by the signal", now, before)
			}
			for _, c := range fixed.Calls() {
				if answered[c.Key] {
					t.Errorf("request %.12s was answered before the signal and asked again", c.Key)
				}
			}
		})
	}
}

// TestSignalEndsCommandWhileBatchesRun: in batch mode, SIGTERM while a
// batch is in progress at the endpoint ends the command with status 3;
// the batch stays recorded, and the same command re-attaches to it instead
// of submitting the requests again.
func TestSignalEndsCommandWhileBatchesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	db := ingestedRun(t)
	srv := llmtest.New(t, llmtest.Options{Batch: llmtest.BatchOptions{Polls: 1 << 30}})
	srv.Add(llmtest.Rule{Func: fakeAnnotator})
	env := []string{"AC3_TEST_KEY=k"}
	args := []string{"annotate", "--db", db, "--stages", "classify", "--annotator", "llm", "--batch", "--config", endpointConfig(t, db, srv.URL, "")}
	// Polled at least once: the command is waiting for the batch.
	polled := func() bool {
		b := srv.Batches()
		return len(b) == 1 && b[0].Status == "in_progress"
	}
	code, out, took := signalled(t, env, syscall.SIGTERM, polled, args...)
	t.Logf("exit status %d %v after SIGTERM", code, took.Round(time.Millisecond))
	if code != run.ExitStopped || took > 5*time.Second {
		t.Fatalf("exit status %d after %v; want %d within 5s:\n%s", code, took, run.ExitStopped, out)
	}
	srv.SetBatch(llmtest.BatchOptions{})
	res := runCLI(t, env, args...)
	if res.code != 0 || !strings.Contains(res.stdout, "classify (llm): 10 conversations done, 0 with failed units") {
		t.Fatalf("resumed run: status %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	if n := len(srv.Batches()); n != 1 {
		t.Errorf("%d batches; the resumed run must re-attach to the one submitted", n)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
