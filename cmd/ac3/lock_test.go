package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/synth"
	"github.com/ac3/ac3/run"
)

// synthInput writes n synthetic WildChat conversations into dir.
func synthInput(t *testing.T, dir string, seed uint64, n, maxTurns int) string {
	t.Helper()
	in := filepath.Join(dir, fmt.Sprintf("chats-%d-%d.jsonl", seed, n))
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := synth.WriteWildChat(f, synth.Options{Seed: seed, Conversations: n, MaxTurns: maxTurns}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return in
}

// cli is ac3 as a real process: this test binary, re-executed as the
// command (see TestMain).
func ac3Process(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(ac3Binary(), args...)
	cmd.Env = append(append(os.Environ(), "AC3_TEST_AS_CLI=1"), env...)
	return cmd
}

func runStatus(t *testing.T, db string) ledger.Status {
	t.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, db, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st, err := l.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestTwoWritersOnOneRunFile starts two `ac3 run` processes on one run file
// together: exactly one does the work; the other is refused at once, before
// doing anything, with status 4 and the one lock line naming the file and
// the holder's PID. The run ends as a single run ends.
func TestTwoWritersOnOneRunFile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	dir := t.TempDir()
	in := synthInput(t, dir, 11, 800, 5)
	config := func(name string) string {
		p := filepath.Join(dir, name+".yaml")
		body := fmt.Sprintf("run: {db: %s.db}\ninput: {files: [%s], filter: {user_turns: {min: 2}}}\nstages:\n  classify: {annotator: heuristic}\n  curate: {strategies: [fc, ao]}\n", filepath.Join(dir, name), in)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if out, err := ac3Process(nil, "run", "--config", config("single")).CombinedOutput(); err != nil {
		t.Fatalf("single run: %v\n%s", err, out)
	}

	both := config("both")
	db := filepath.Join(dir, "both.db")
	type result struct {
		stdout, stderr bytes.Buffer
		cmd            *exec.Cmd
		err            error
	}
	var rs [2]*result
	for i := range rs {
		r := &result{cmd: ac3Process(nil, "run", "--config", both)}
		r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
		rs[i] = r
	}
	for _, r := range rs {
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rs {
		r.err = r.cmd.Wait()
	}
	var ran, refused []*result
	for _, r := range rs {
		var ee *exec.ExitError
		switch {
		case r.err == nil:
			ran = append(ran, r)
		case errors.As(r.err, &ee) && ee.ExitCode() == run.ExitLocked:
			refused = append(refused, r)
		default:
			t.Fatalf("a writer ended with %v\nstdout:\n%s\nstderr:\n%s", r.err, r.stdout.String(), r.stderr.String())
		}
	}
	if len(ran) != 1 || len(refused) != 1 {
		t.Fatalf("%d writers ran and %d were refused, want 1 and 1\nfirst: %s%s\nsecond: %s%s", len(ran), len(refused),
			rs[0].stdout.String(), rs[0].stderr.String(), rs[1].stdout.String(), rs[1].stderr.String())
	}
	r := refused[0]
	line := strings.TrimSpace(r.stderr.String())
	want := fmt.Sprintf("ac3: run file %s is being written by process %d on host ", db, ran[0].cmd.Process.Pid)
	if strings.Contains(line, "\n") || !strings.HasPrefix(line, want) {
		t.Errorf("the refused writer said %q, want one line starting %q", line, want)
	}
	if r.stdout.Len() > 0 {
		t.Errorf("the refused writer did something first:\n%s", r.stdout.String())
	}

	single, got := runStatus(t, filepath.Join(dir, "single.db")), runStatus(t, db)
	if got.Conversations != single.Conversations || got.DroppedTotal != single.DroppedTotal || got.QuarantTotal != single.QuarantTotal {
		t.Errorf("conversations %d, dropped %d, quarantined %d; a single run has %d, %d, %d",
			got.Conversations, got.DroppedTotal, got.QuarantTotal, single.Conversations, single.DroppedTotal, single.QuarantTotal)
	}
	if fmt.Sprint(got.Stages) != fmt.Sprint(single.Stages) {
		t.Errorf("stages\n%v\nwant (a single run)\n%v", got.Stages, single.Stages)
	}
	if len(got.Stages) == 0 {
		t.Error("no stage ran")
	}
}
