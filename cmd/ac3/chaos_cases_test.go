package main

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/synth"
	"github.com/ac3/ac3/run"
)

// The chaos cases beyond kills and endpoint faults (issue 26): the run's
// write-ahead log removed mid-run, SIGTERM at seeded moments, an endpoint
// that goes away mid-run. Each ends the interrupted run its own way, resumes
// it, and compares every export and report with a run that met nothing
// (chaosCompareOutputs; the damaged run file at rest is
// TestDamagedRunFileNeverExportsWrongData, the damaged Parquet input
// TestChaosDamagedParquetInput). They run in the full chaos form only
// (`just chaos`): each is a few end-to-end runs, and the suite covers each
// mechanism in a unit test of its own.

// chaosCase is the shared set-up: the synthetic input and the reference
// run that met no fault.
type chaosCase struct {
	dir, in  string
	refCalls int
}

func newChaosCase(t *testing.T) chaosCase {
	t.Helper()
	if testing.Short() || os.Getenv(chaosEnv) == "" {
		t.Skipf("part of the full chaos test: set %s=1 (just chaos)", chaosEnv)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "chats.jsonl")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := synth.WriteWildChat(f, synth.Options{Seed: 26, Conversations: chaosShort.records, MaxTurns: 6}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	ref := startScripted(t)
	if out, err := chaosRun(chaosConfig(t, dir, "ref", in), ref.URL).CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	return chaosCase{dir: dir, in: in, refCalls: ref.Count()}
}

// startUntil starts cmd and waits until srv has seen at least n requests
// in all; the test fails if the process ends first.
func startUntil(t *testing.T, cmd *exec.Cmd, srv *llmtest.Server, n int) (exited chan error, out *bytes.Buffer) {
	t.Helper()
	out = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited = make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(2 * time.Minute)
	for srv.Count() < n {
		select {
		case err := <-exited:
			t.Fatalf("the run ended (%v) before request %d arrived: the fault could not land mid-run\n%s", err, n, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("request %d did not arrive within two minutes\n%s", n, out)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return exited, out
}

// exitOf waits up to limit for the process to end and returns its status.
func exitOf(t *testing.T, exited chan error, limit time.Duration, out *bytes.Buffer) int {
	t.Helper()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0
		case errors.As(err, &ee) && ee.Exited():
			return ee.ExitCode()
		}
		t.Fatalf("the run did not exit on its own: %v\n%s", err, out)
	case <-time.After(limit):
		t.Fatalf("the run was still going %v later\n%s", limit, out)
	}
	return -1
}

// finishAndCompare runs cfg to its end against srv and compares its outputs
// with the reference run's.
func (c chaosCase) finishAndCompare(t *testing.T, cfg, name string, srv *llmtest.Server) {
	t.Helper()
	if out, err := chaosRun(cfg, srv.URL).CombinedOutput(); err != nil {
		t.Fatalf("resumed run: %v\n%s", err, out)
	}
	chaosCompareOutputs(t, filepath.Join(c.dir, "ref", "e2e"), filepath.Join(c.dir, name, "e2e"))
}

// repeats is how many requests srv was sent more than once (by cache key).
func repeats(srv *llmtest.Server) int {
	seen := map[string]int{}
	n := 0
	for _, call := range srv.Calls() {
		if seen[call.Key]++; seen[call.Key] > 1 {
			n++
		}
	}
	return n
}

// TestChaosWALRemovedMidRun removes e2e.db-wal while `ac3 run` writes: the
// run stops with the stopped status and says why, the file as the next
// process finds it checks sound and holds every commit made before, and
// the resumed run ends with the reference's outputs, having asked again at
// most the requests in flight.
func TestChaosWALRemovedMidRun(t *testing.T) {
	c := newChaosCase(t)
	srv := startScriptedWith(t, llmtest.Options{Latency: 20 * time.Millisecond})
	cfg := chaosConfig(t, c.dir, "walgone", c.in)
	db := filepath.Join(c.dir, "walgone", "e2e.db")
	exited, out := startUntil(t, chaosRun(cfg, srv.URL), srv, c.refCalls/3)
	if err := os.Remove(db + "-wal"); err != nil {
		t.Fatalf("removing the log: %v", err)
	}
	at := srv.Count()
	code := exitOf(t, exited, time.Minute, out)
	if code != run.ExitStopped || !strings.Contains(out.String(), "-wal was removed") {
		t.Fatalf("after the log was removed the run exited %d:\n%s", code, out)
	}
	if n := chaosCount(t, db, `SELECT count(*) FROM llm_cache`); n == 0 {
		t.Fatal("the run file holds no answer: the commits in the removed log were lost")
	}
	c.finishAndCompare(t, cfg, "walgone", srv)
	if r := repeats(srv); r > 16 {
		t.Errorf("%d requests were sent again (the log went at request %d); at most those in flight may be", r, at)
	}
	t.Logf("log removed at request %d; %d requests in all (%d in the reference), %d sent again", at, srv.Count(), c.refCalls, repeats(srv))
}

// TestChaosSIGTERMTiming sends SIGTERM to `ac3 run` at four seeded moments
// of its model calls, against an endpoint slow enough that calls are always
// in flight: each time it must end within 5 s with the stopped status, and
// the resumed run ends with the reference's outputs.
func TestChaosSIGTERMTiming(t *testing.T) {
	c := newChaosCase(t)
	srv := startScriptedWith(t, llmtest.Options{Latency: 300 * time.Millisecond})
	cfg := chaosConfig(t, c.dir, "sigterm", c.in)
	rng := rand.New(rand.NewPCG(26, 15))
	const signals = 4
	for i := range signals {
		target := int((float64(i) + 0.1 + 0.8*rng.Float64()) * float64(c.refCalls) / (signals + 1))
		cmd := chaosRun(cfg, srv.URL)
		exited, out := startUntil(t, cmd, srv, max(target, srv.Count()+1))
		sent := time.Now()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		code := exitOf(t, exited, 30*time.Second, out)
		took := time.Since(sent)
		if code != run.ExitStopped {
			t.Fatalf("SIGTERM %d: exit %d, want %d\n%s", i+1, code, run.ExitStopped, out)
		}
		if took > 5*time.Second {
			t.Errorf("SIGTERM %d: the run took %v to end, more than 5 s", i+1, took.Round(time.Millisecond))
		}
		t.Logf("SIGTERM %d at request %d: ended in %v", i+1, srv.Count(), took.Round(time.Millisecond))
	}
	c.finishAndCompare(t, cfg, "sigterm", srv)
	if r := repeats(srv); r > signals*16 {
		t.Errorf("%d requests were sent again; at most those in flight at the %d signals may be", r, signals)
	}
}

// TestChaosEndpointGoneMidRun closes the endpoint while `ac3 run` is using
// it: with limits.unreachable at 2 s the run ends with the stopped status
// and one line naming the endpoint, and, resumed against an endpoint at a
// new address, ends with the reference's outputs.
func TestChaosEndpointGoneMidRun(t *testing.T) {
	c := newChaosCase(t)
	srv := startScripted(t)
	cfg := chaosConfig(t, c.dir, "gone", c.in)
	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const limits = "limits: {concurrency: 8}"
	if !bytes.Contains(raw, []byte(limits)) {
		t.Fatalf("the e2e config no longer has %q", limits)
	}
	raw = bytes.Replace(raw, []byte(limits), []byte("limits: {concurrency: 8, unreachable: 2s}"), 1)
	if err := os.WriteFile(cfg, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	exited, out := startUntil(t, chaosRun(cfg, srv.URL), srv, c.refCalls/2)
	url := srv.URL
	srv.Close()
	gone := time.Now()
	code := exitOf(t, exited, time.Minute, out)
	if code != run.ExitStopped || !strings.Contains(out.String(), "unreachable") || !strings.Contains(out.String(), strings.TrimSuffix(url, "/v1")) {
		t.Fatalf("with the endpoint gone the run exited %d:\n%s", code, out)
	}
	t.Logf("endpoint gone: the run ended %v later", time.Since(gone).Round(time.Millisecond))
	c.finishAndCompare(t, cfg, "gone", startScripted(t))
}

// TestChaosDamagedParquetInput runs the e2e config over a Parquet input
// with 64 bytes flipped in the middle: the run must stop at ingest with an
// error naming the file and the row group, leave the input unfinished, and,
// once the intact file is back in its place, end with the outputs of a run
// over the intact file.
func TestChaosDamagedParquetInput(t *testing.T) {
	c := newChaosCase(t)
	pq := filepath.Join(c.dir, "chats.parquet")
	mustRun(t, "convert", "--out", pq, c.in)
	intact, err := os.ReadFile(pq)
	if err != nil {
		t.Fatal(err)
	}
	ref := startScripted(t)
	refCfg := chaosConfig(t, c.dir, "pqref", pq)
	if out, err := chaosRun(refCfg, ref.URL).CombinedOutput(); err != nil {
		t.Fatalf("reference run over Parquet: %v\n%s", err, out)
	}

	damaged := bytes.Clone(intact)
	mid := len(damaged) / 2
	for i := mid; i < mid+64; i++ {
		damaged[i] ^= 0xff
	}
	if err := os.WriteFile(pq, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startScripted(t)
	cfg := chaosConfig(t, c.dir, "pqdamaged", pq)
	out, err := chaosRun(cfg, srv.URL).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 || !strings.Contains(string(out), pq) || !strings.Contains(string(out), "row group") {
		t.Fatalf("a run over a damaged Parquet input: %v\n%s", err, out)
	}
	if srv.Count() != 0 {
		t.Errorf("the run stopped at ingest but sent %d requests", srv.Count())
	}
	st := chaosStatus(t, filepath.Join(c.dir, "pqdamaged", "e2e.db"))
	for _, in := range st.Inputs {
		if in.Finished {
			t.Fatalf("the damaged input is marked finished: %+v", in)
		}
	}
	if err := os.WriteFile(pq, intact, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := chaosRun(cfg, srv.URL).CombinedOutput(); err != nil {
		t.Fatalf("the run over the intact file: %v\n%s", err, out)
	}
	chaosCompareOutputs(t, filepath.Join(c.dir, "pqref", "e2e"), filepath.Join(c.dir, "pqdamaged", "e2e"))
}
