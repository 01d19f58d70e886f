package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/synth"
)

// TestKillAndResumeGivesIdenticalExports kills `ac3 run` with SIGKILL at
// random moments several times, finishes the run, and checks that every
// export is byte-identical to the exports of a run that was never
// interrupted.
func TestKillAndResumeGivesIdenticalExports(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for several seconds")
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "chats.jsonl")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := synth.WriteWildChat(f, synth.Options{Seed: 7, Conversations: 300, MaxTurns: 6}); err != nil {
		t.Fatal(err)
	}
	f.Close()

	writeConfig := func(name string) string {
		cfg := fmt.Sprintf(`run: {db: %[1]s.db, out: %[1]s-out}
input:
  files: [%[2]s]
  filter: {user_turns: {min: 2}, dedupe: true, language: [English, Spanish]}
stages:
  curate: {strategies: [fc, ao, lt, de, concat, filler]}
export:
  - {what: conversations, format: jsonl}
  - {what: curated, format: parquet}
  - {what: curated, format: jsonl, out: %[1]s-out/curated.jsonl.zst}
  - {what: quarantine, format: parquet}
`, filepath.Join(dir, name), in)
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(cfg string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "run", "--config", cfg)
		cmd.Env = append(os.Environ(), "AC3_TEST_AS_CLI=1")
		return cmd
	}

	ref := writeConfig("ref")
	if out, err := run(ref).CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}

	killed := writeConfig("killed")
	rng := rand.New(rand.NewPCG(7, 1)) // fixed: the kill times are the same every run
	kills := 0
	for i := 0; i < 6; i++ {
		cmd := run(killed)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		wait := time.Duration(30+rng.IntN(900)) * time.Millisecond
		select {
		case <-time.After(wait):
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
			kills++
			t.Logf("killed after %v", wait)
		case err := <-done:
			if err != nil {
				t.Fatalf("interrupted run %d failed on its own: %v\n%s", i, err, out.String())
			}
			t.Logf("run %d finished before the kill at %v", i, wait)
		}
	}
	out, err := run(killed).CombinedOutput()
	if err != nil {
		t.Fatalf("final run: %v\n%s", err, out)
	}
	if kills == 0 {
		t.Log("no run was killed mid-way; the machine is fast — comparison still checked")
	}

	for _, name := range []string{"conversations.jsonl", "curated.parquet", "curated.jsonl.zst", "quarantine.parquet"} {
		a, err := os.ReadFile(filepath.Join(dir, "ref-out", name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "killed-out", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs after kills and resume (%d vs %d bytes)", name, len(a), len(b))
		}
	}
}

// TestInterruptStopsCleanlyAndResumes sends one SIGINT to a running ingest:
// the process must exit on its own with the "stopped" status (or success,
// if it finished first), having committed what it finished, and the same
// command must then complete the run.
func TestInterruptStopsCleanlyAndResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "chats.jsonl")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := synth.WriteWildChat(f, synth.Options{Seed: 3, Conversations: 5000, MaxTurns: 3}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	db := filepath.Join(dir, "run.db")
	cmd := exec.Command(os.Args[0], "ingest", "--db", db, in)
	cmd.Env = append(os.Environ(), "AC3_TEST_AS_CLI=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the run file exists and some work is committed.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if st, err := os.Stat(db + "-wal"); err == nil && st.Size() > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitStopped {
			t.Fatalf("interrupted ingest exited with %v, want status %d\n%s", err, exitStopped, out.String())
		}
	}
	first := out.String()
	if !bytes.Contains(out.Bytes(), []byte("stopping")) {
		t.Logf("the ingest may have finished before the signal:\n%s", first)
	}
	out.Reset()
	cmd = exec.Command(os.Args[0], "ingest", "--db", db, in)
	cmd.Env = append(os.Environ(), "AC3_TEST_AS_CLI=1")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("resumed ingest: %v\n%s", err, out.String())
	}
	t.Logf("second run: %s", out.String())
	st := mustRun(t, "status", "--db", db, "--json")
	if !bytes.Contains([]byte(st), []byte(`"records": 5000`)) || !bytes.Contains([]byte(st), []byte(`"finished": true`)) {
		t.Fatalf("after resume the input is not fully read:\n%s\nfirst run:\n%s\nsecond run:\n%s", st, first, out.String())
	}
}

// TestSecondInterruptWaitsForTheFinalCommit sends two SIGINTs to a running
// ingest: the process abandons work in flight but still exits on its own,
// with the "stopped" status, after the engine's last commit; the run file is
// whole and the same command completes the run.
func TestSecondInterruptWaitsForTheFinalCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "chats.jsonl")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := synth.WriteWildChat(f, synth.Options{Seed: 5, Conversations: 5000, MaxTurns: 3}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	db := filepath.Join(dir, "run.db")
	cmd := exec.Command(os.Args[0], "ingest", "--db", db, in)
	cmd.Env = append(os.Environ(), "AC3_TEST_AS_CLI=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if st, err := os.Stat(db + "-wal"); err == nil && st.Size() > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	time.Sleep(50 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitStopped {
			t.Fatalf("twice interrupted ingest exited with %v, want status %d\n%s", err, exitStopped, out.String())
		}
	}
	mustRun(t, "status", "--db", db)
	resumed := exec.Command(os.Args[0], "ingest", "--db", db, in)
	resumed.Env = append(os.Environ(), "AC3_TEST_AS_CLI=1")
	if b, err := resumed.CombinedOutput(); err != nil {
		t.Fatalf("resumed ingest: %v\n%s", err, b)
	}
	st := mustRun(t, "status", "--db", db, "--json")
	if !bytes.Contains([]byte(st), []byte(`"records": 5000`)) || !bytes.Contains([]byte(st), []byte(`"conversations": 5000`)) {
		t.Fatalf("after resume the run does not hold every record once:\n%s\nfirst run:\n%s", st, out.String())
	}
}

// TestKillDuringAModelStageRepeatsNoPaidCall kills `ac3 respond` with
// SIGKILL four times while its window of calls is open (each kill after a
// seeded number of new requests at the endpoint), then lets it finish. From
// the endpoint's log: no request whose answer the run file held at a kill
// is sent after it (the only repeats are requests in flight at a kill), no
// request is sent twice by one process, the run asks exactly what an
// uninterrupted run asks, and it ends with the same counts.
func TestKillDuringAModelStageRepeatsNoPaidCall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	dir := t.TempDir()
	in := synthInput(t, dir, 21, 150, 5)
	answer := func(r llmtest.ChatRequest) llmtest.Reply {
		h := sha256.Sum256([]byte(fmt.Sprint(r.Messages)))
		return llmtest.Reply{Content: "Answer " + hex.EncodeToString(h[:8]), Latency: 5 * time.Millisecond}
	}
	prepare := func(name string) string {
		db := filepath.Join(dir, name+".db")
		mustRun(t, "ingest", "--db", db, "--min-turns", "2", in)
		mustRun(t, "curate", "--db", db, "--strategies", "fc,ao")
		return db
	}
	respond := func(srv *llmtest.Server, db string) *exec.Cmd {
		return ac3Process([]string{"OPENAI_BASE_URL=" + srv.URL, "OPENAI_API_KEY=k", "OPENAI_MODEL=m"},
			"respond", "--db", db, "--strategies", "fc,ao")
	}
	keys := func(calls []llmtest.Call) map[string]int {
		out := map[string]int{}
		for _, c := range calls {
			if c.Key == "" {
				t.Fatalf("a request without the %s header", llmtest.KeyHeader)
			}
			out[c.Key]++
		}
		return out
	}

	refSrv := llmtest.New(t, llmtest.Options{})
	refSrv.Add(llmtest.Rule{Func: answer})
	refDB := prepare("ref")
	if out, err := respond(refSrv, refDB).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted respond: %v\n%s", err, out)
	}
	refKeys := keys(refSrv.Calls())
	total := len(refKeys)
	if total < 200 {
		t.Fatalf("the uninterrupted run made %d distinct requests; the test needs more", total)
	}

	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{Func: answer})
	db := prepare("killed")
	// A checkpoint is the moment a killed process was gone, with the
	// requests whose answers the run file held then.
	type checkpoint struct {
		at     time.Time
		cached map[string]bool
	}
	var cps []checkpoint
	rng := rand.New(rand.NewPCG(21, 4))
	const wantKills = 4
	for i := range wantKills {
		threshold := srv.Count() + total/12 + rng.IntN(total/12)
		cmd := respond(srv, db)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		finished := false
	poll:
		for srv.Count() < threshold {
			select {
			case err := <-done:
				finished = true
				if err != nil {
					t.Fatalf("respond run %d failed on its own: %v\n%s", i, err, out.String())
				}
				break poll
			case <-time.After(time.Millisecond):
			}
		}
		if finished {
			t.Fatalf("respond run %d finished before its kill at request %d of about %d", i, threshold, total)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		cp := checkpoint{at: time.Now(), cached: map[string]bool{}}
		l, err := ledger.Open(context.Background(), db, ledger.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		for k := range keys(srv.Calls()) {
			if _, ok, err := l.LLMCache().Get(context.Background(), k); err != nil {
				t.Fatal(err)
			} else if ok {
				cp.cached[k] = true
			}
		}
		l.Close()
		t.Logf("kill %d after %d requests: %d answers kept", i+1, srv.Count(), len(cp.cached))
		cps = append(cps, cp)
	}
	if out, err := respond(srv, db).CombinedOutput(); err != nil {
		t.Fatalf("final respond: %v\n%s", err, out)
	}

	calls := srv.Calls()
	// A call belongs to the process that was running when it arrived; but a
	// request a process sent just before its kill can be logged after the
	// checkpoint, so the process of a call is that of the earliest call on
	// its connection (a connection is one process's).
	byTime := func(c llmtest.Call) int {
		proc := len(cps) // the final run unless it arrived before a checkpoint
		for j := len(cps) - 1; j >= 0; j-- {
			if c.Time.Before(cps[j].at) {
				proc = j
			}
		}
		return proc
	}
	connProc := map[uint64]int{}
	for _, c := range calls {
		proc := byTime(c)
		if p, ok := connProc[c.Conn]; !ok || proc < p {
			connProc[c.Conn] = proc
		}
	}
	resent, repeats := 0, 0
	seenIn := map[[2]any]bool{} // (process, key)
	for _, c := range calls {
		proc := connProc[c.Conn]
		for j := range proc {
			if cps[j].cached[c.Key] {
				resent++
				t.Errorf("request %s was sent again (arrival %d) after the run file held its answer at kill %d", c.Key[:12], c.Nth, j+1)
				break
			}
		}
		if seenIn[[2]any{proc, c.Key}] {
			t.Errorf("request %s was sent twice by process %d", c.Key[:12], proc+1)
		}
		seenIn[[2]any{proc, c.Key}] = true
		if c.Nth > 1 {
			repeats++
		}
	}
	got := keys(calls)
	if len(got) != len(refKeys) {
		t.Errorf("%d distinct requests, the uninterrupted run made %d", len(got), len(refKeys))
	}
	for k := range refKeys {
		if got[k] == 0 {
			t.Errorf("request %s of the uninterrupted run was never made", k[:12])
			break
		}
	}
	t.Logf("%d requests for %d distinct ones: %d repeats, all of requests in flight at one of %d kills", len(calls), len(got), repeats, len(cps))

	stages := func(db string) string {
		var out []ledger.StageStatus
		for _, s := range runStatus(t, db).Stages {
			if s.Stage == "respond" {
				out = append(out, s)
			}
		}
		return fmt.Sprint(out)
	}
	if a, b := stages(db), stages(refDB); a != b || a == "[]" {
		t.Errorf("respond after kills and resume: %s\nuninterrupted: %s", a, b)
	}
}
