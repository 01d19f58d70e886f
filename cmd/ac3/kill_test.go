package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/synth"
	"github.com/ac3/ac3/run"
)

// runProgress is how far the run file at db has got: conversations kept
// plus tasks done, read as a second process would (read-only, beside the
// writer); -1 before the run file can be read. It is two counts over
// indexes, cheap enough to poll without slowing the run it watches.
func runProgress(db string) int64 {
	if _, err := os.Stat(db); err != nil {
		return -1
	}
	h, err := sql.Open("sqlite3", "file:"+db+"?mode=ro&_busy_timeout=1000")
	if err != nil {
		return -1
	}
	defer h.Close()
	var n int64
	if err := h.QueryRow(`SELECT (SELECT count(*) FROM conversations) + (SELECT count(*) FROM tasks WHERE status = 'done')`).Scan(&n); err != nil {
		return -1
	}
	return n
}

// cachedAnswers counts the model answers the run file at db holds (-1
// when it cannot be read yet).
func cachedAnswers(db string) int {
	h, err := sql.Open("sqlite3", "file:"+db+"?mode=ro&_busy_timeout=1000")
	if err != nil {
		return -1
	}
	defer h.Close()
	var n int
	if err := h.QueryRow(`SELECT count(*) FROM llm_cache`).Scan(&n); err != nil {
		return -1
	}
	return n
}

// killAtProgress starts cmd, kills it with SIGKILL once the run file at db
// has reached target (see runProgress), and returns the progress it had
// when killed. It fails the test when the process finished first.
func killAtProgress(t *testing.T, cmd *exec.Cmd, db string, target int64, n int) int64 {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	at := waitProgress(t, db, target, exited, &out)
	cmd.Process.Signal(syscall.SIGKILL)
	err := <-exited
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Exited() {
		t.Fatalf("kill %d did not end the process (%v): it finished first\n%s", n, err, out.String())
	}
	return at
}

// waitProgress polls the run file at db until its progress reaches at
// least target, and fails the test if the process exits first (its exit is
// read from exited) or nothing reaches the target within a minute: an
// interruption test whose interruption cannot land must not pass.
func waitProgress(t *testing.T, db string, target int64, exited <-chan error, out *bytes.Buffer) int64 {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-exited:
			t.Fatalf("the process ended (%v) before the run reached progress %d: the interruption could not land\n%s", err, target, out.String())
		default:
		}
		if p := runProgress(db); p >= target {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not reach progress %d within a minute\n%s", target, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestKillAndResumeGivesIdenticalExports kills `ac3 run` with SIGKILL six
// times, each once the run file shows a seeded share of the reference run's
// progress (conversations kept and tasks done), resumes it, and checks that
// every export is byte-identical to the exports of a run that was never
// interrupted. Every kill must land on a live process (a run that
// finishes before its kill fails the test), and at least three distinct
// points of stage work must be interrupted.
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
	runCmd := func(cfg string) *exec.Cmd {
		cmd := exec.Command(ac3Binary(), "run", "--config", cfg)
		cmd.Env = append(os.Environ(), "AC3_TEST_AS_CLI=1")
		return cmd
	}

	ref := writeConfig("ref")
	refStart := time.Now()
	if out, err := runCmd(ref).CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	t.Logf("reference run: %v", time.Since(refStart).Round(time.Millisecond))
	total := runProgress(filepath.Join(dir, "ref.db"))
	if total < 400 {
		t.Fatalf("the reference run reached progress %d; the test needs more work to interrupt", total)
	}

	killed := writeConfig("killed")
	db := filepath.Join(dir, "killed.db")
	rng := rand.New(rand.NewPCG(7, 1)) // fixed: the kill points are the same every run
	const kills = 6
	// The run file's progress moves in commits of a few hundred units, so
	// under load two kills may land at one point, and a late one after
	// the last stage's commit, while the exports are written (a kill there
	// is a fair test too). What must hold is that the kills interrupted
	// stage work at several points.
	mid := map[int64]bool{}
	for i := 0; i < kills; i++ {
		// Kill i lands in the i-th seventh of the run's progress.
		target := int64((float64(i) + 0.2 + 0.6*rng.Float64()) * float64(total) / (kills + 1))
		at := killAtProgress(t, runCmd(killed), db, target, i+1)
		t.Logf("kill %d at progress %d of %d (target %d)", i+1, at, total, target)
		if at < total {
			mid[at] = true
		}
	}
	if len(mid) < 3 {
		t.Fatalf("the kills interrupted stage work at %d points, want at least 3: they came too late", len(mid))
	}
	out, err := runCmd(killed).CombinedOutput()
	if err != nil {
		t.Fatalf("final run: %v\n%s", err, out)
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

// interruptIngest starts `ac3 ingest` of interruptRecords records, waits until the
// run file holds some of them, sends sig count times, 50 ms apart, and
// returns the process's exit error and output. It fails the test when the
// ingest cannot be caught mid-way.
func interruptIngest(t *testing.T, seed uint64, sig os.Signal) (db, in string, err error, out string) {
	t.Helper()
	dir := t.TempDir()
	in = filepath.Join(dir, "chats.jsonl")
	f, ferr := os.Create(in)
	if ferr != nil {
		t.Fatal(ferr)
	}
	if _, err := synth.WriteWildChat(f, synth.Options{Seed: seed, Conversations: interruptRecords, MaxTurns: 3}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	db = filepath.Join(dir, "run.db")
	cmd := exec.Command(ac3Binary(), "ingest", "--db", db, in)
	cmd.Env = append(os.Environ(), "AC3_TEST_AS_CLI=1")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	at := waitProgress(t, db, 1, exited, &buf)
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal: %v (the process ended before it landed)", err)
	}
	err = <-exited
	t.Logf("signalled at %d of %d records kept", at, interruptRecords)
	return db, in, err, buf.String()
}

// interruptRecords is the ingest the interruption tests stop: large enough
// that it is still running when its first commit shows.
const interruptRecords = 10000

// checkStoppedMidway asserts that an interrupted ingest exited with the
// stopped status, having said so, and left its input unfinished.
func checkStoppedMidway(t *testing.T, db string, err error, out string) {
	t.Helper()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != run.ExitStopped {
		t.Fatalf("interrupted ingest exited with %v, want status %d\n%s", err, run.ExitStopped, out)
	}
	if !strings.Contains(out, "stopping") {
		t.Fatalf("the ingest did not say it was stopping:\n%s", out)
	}
	l, oerr := ledger.Open(context.Background(), db, ledger.Options{ReadOnly: true})
	if oerr != nil {
		t.Fatal(oerr)
	}
	defer l.Close()
	ins, ierr := l.Inputs(context.Background())
	if ierr != nil || len(ins) != 1 {
		t.Fatalf("inputs after the interrupt: %+v, %v", ins, ierr)
	}
	if ins[0].Finished || ins[0].RecordsDone >= interruptRecords {
		t.Fatalf("the input was read whole (%d records) before the signal took effect: the interruption did not land", ins[0].RecordsDone)
	}
}

// TestInterruptStopsCleanlyAndResumes sends one SIGINT to a running ingest:
// the process must exit on its own with the "stopped" status, having
// committed what it finished and left the rest, and the same command must
// then complete the run.
func TestInterruptStopsCleanlyAndResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	db, in, err, first := interruptIngest(t, 3, os.Interrupt)
	checkStoppedMidway(t, db, err, first)
	cmd := exec.Command(ac3Binary(), "ingest", "--db", db, in)
	cmd.Env = append(os.Environ(), "AC3_TEST_AS_CLI=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("resumed ingest: %v\n%s", err, out)
	}
	st := mustRun(t, "status", "--db", db, "--json")
	if !strings.Contains(st, fmt.Sprintf(`"records": %d`, interruptRecords)) || !strings.Contains(st, `"finished": true`) {
		t.Fatalf("after resume the input is not fully read:\n%s\nfirst run:\n%s\nsecond run:\n%s", st, first, out)
	}
}

// TestSecondInterruptWaitsForTheFinalCommit sends two SIGINTs to a
// respond run whose endpoint has stopped answering: the first starts the
// grace period, the second (sent once the process has said it is stopping)
// abandons the calls in flight at once. The process must still exit on its
// own with the "stopped" status, long before the grace period would have
// ended, after the engine's last commit: the answers it had are kept, the
// run file is whole, and the same command then completes the run without
// asking again for what it kept.
func TestSecondInterruptWaitsForTheFinalCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	dir := t.TempDir()
	in := synthInput(t, dir, 9, 40, 3)
	db := filepath.Join(dir, "run.db")
	mustRun(t, "ingest", "--db", db, "--min-turns", "2", in)
	mustRun(t, "curate", "--db", db, "--strategies", "fc")
	const fastAnswers = 12
	var mu sync.Mutex
	hanging := false
	answered := map[string]bool{} // the requests the endpoint answered
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{Func: func(r llmtest.ChatRequest) llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		if hanging {
			return llmtest.Reply{Content: "late", Latency: time.Minute}
		}
		answered[fmt.Sprint(r.Messages)] = true
		return llmtest.Reply{Content: "answer"}
	}})
	env := []string{"OPENAI_BASE_URL=" + srv.URL, "OPENAI_API_KEY=k", "OPENAI_MODEL=m"}
	cmd := ac3Process(env, "respond", "--db", db, "--strategies", "fc")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// From the fastAnswers-th request on, the endpoint holds every call.
	for srv.Count() < fastAnswers {
		select {
		case err := <-exited:
			t.Fatalf("respond ended before the endpoint stopped answering: %v\n%s", err, out.String())
		case <-time.After(time.Millisecond):
		}
	}
	mu.Lock()
	hanging = true
	mu.Unlock()
	// Wait until every answer given so far is in the run file and one task
	// is done, so there is work to keep. An answer the server has written
	// but the client has not yet read is in flight: the second interrupt may
	// rightly abandon it, so the check below is only fair once none is.
	mu.Lock()
	given := len(answered)
	mu.Unlock()
	deadline := time.Now().Add(time.Minute)
	for runProgress(db) < 1+int64(40) || cachedAnswers(db) < given { // conversations plus at least one answer
		if time.Now().After(deadline) {
			t.Fatalf("within a minute, %d answers of %d given were stored and %d tasks done\n%s", cachedAnswers(db), given, runProgress(db)-40, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatalf("first signal: %v\n%s", err, out.String())
	}
	for !strings.Contains(out.String(), "stopping:") {
		select {
		case err := <-exited:
			t.Fatalf("respond ended after the first signal without saying it was stopping: %v\n%s", err, out.String())
		case <-time.After(time.Millisecond):
		}
	}
	sent := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatalf("second signal: the process ended first (%v); its calls should still be held\n%s", err, out.String())
	}
	err := <-exited
	took := time.Since(sent)
	first := out.String()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != run.ExitStopped {
		t.Fatalf("interrupted respond exited with %v, want status %d\n%s", err, run.ExitStopped, first)
	}
	if !strings.Contains(first, "abandoning work in flight; committed work is kept") {
		t.Fatalf("the second interrupt did not land:\n%s", first)
	}
	if strings.Contains(first, "still busy") {
		t.Fatalf("the process was ended by the deadline, not by its own final commit:\n%s", first)
	}
	// The grace period is run.StopGrace; the second signal must cut it short.
	if took >= run.StopGrace {
		t.Fatalf("the process took %s after the second signal; the grace period is %s", took, run.StopGrace)
	}
	// Every answer the endpoint gave before the interrupt is in the run
	// file: abandoning calls in flight loses none that had finished.
	l, err := ledger.Open(context.Background(), db, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	mu.Lock()
	for _, c := range srv.Calls() {
		_, ok, err := l.LLMCache().Get(context.Background(), c.Key)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			kept[c.Key] = true
		} else if answered[fmt.Sprint(c.Request.Messages)] {
			t.Errorf("the endpoint answered a request before the interrupt that the run file does not hold")
		}
	}
	hanging = false
	mu.Unlock()
	l.Close()
	if len(kept) == 0 {
		t.Fatalf("no answer was kept by the interrupted run:\n%s", first)
	}
	before := len(srv.Calls())
	if b, err := ac3Process(env, "respond", "--db", db, "--strategies", "fc").CombinedOutput(); err != nil {
		t.Fatalf("resumed respond: %v\n%s", err, b)
	}
	if done, total := respondCounts(t, db); done != total {
		t.Fatalf("after resume respond has %d of %d conversations done", done, total)
	}
	// The resumed run asks for nothing the interrupted one kept.
	for _, c := range srv.Calls()[before:] {
		if kept[c.Key] {
			t.Fatalf("the resumed run asked again for an answer the run file held")
		}
	}
	t.Logf("%d answers kept at the interrupt; the resumed run sent %d requests", len(kept), len(srv.Calls())-before)
}

// respondCounts is the respond stage's done tasks and all its tasks.
func respondCounts(t *testing.T, db string) (done, total int64) {
	t.Helper()
	for _, st := range runStatus(t, db).Stages {
		if st.Stage == "respond" {
			done += st.Done
			total += st.Done + st.Failed + st.Pending
		}
	}
	return done, total
}

// syncBuffer is a bytes.Buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
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
	respond := func(url, db string) *exec.Cmd {
		return ac3Process([]string{"OPENAI_BASE_URL=" + url, "OPENAI_API_KEY=k", "OPENAI_MODEL=m"},
			"respond", "--db", db, "--strategies", "fc,ao")
	}
	// Each process of the killed run gets a door of its own at the
	// endpoint: a request a process wrote just before its kill can be read
	// after the next process started, and the door still says whose it was.
	doorProc := map[int]int{}
	open := func(srv *llmtest.Server, proc int) string {
		url, door, err := srv.Door()
		if err != nil {
			t.Fatal(err)
		}
		doorProc[door] = proc
		return url
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
	if out, err := respond(refSrv.URL, refDB).CombinedOutput(); err != nil {
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
	// A checkpoint is what the run file held once a killed process was
	// gone: the requests whose answers it had stored.
	type checkpoint struct {
		cached map[string]bool
	}
	var cps []checkpoint
	rng := rand.New(rand.NewPCG(21, 4))
	const wantKills = 4
	for i := range wantKills {
		threshold := srv.Count() + total/12 + rng.IntN(total/12)
		cmd := respond(open(srv, len(cps)), db)
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
		cp := checkpoint{cached: map[string]bool{}}
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
	if out, err := respond(open(srv, len(cps)), db).CombinedOutput(); err != nil {
		t.Fatalf("final respond: %v\n%s", err, out)
	}

	calls := srv.Calls()
	resent, repeats := 0, 0
	seenIn := map[[2]any]bool{} // (process, key)
	for _, c := range calls {
		proc, ok := doorProc[c.Door]
		if !ok {
			t.Fatalf("a request came through door %d, which no process was given", c.Door)
		}
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
