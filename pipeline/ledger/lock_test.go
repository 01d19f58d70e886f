package ledger_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
)

// helperEnv, when set in a test binary's environment, makes TestMain act as
// a writer process instead of running the tests (the usual Go pattern for
// tests that need several real processes).
const helperEnv = "AC3_LEDGER_HELPER"

func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		os.Exit(writerProcess(path))
	}
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// writerProcess waits for a line on stdin (so several processes can be
// released at once), opens the run as a writer, prints "locked" and waits
// for stdin to close; then it ingests 50 conversations and exits 0. When the
// open is refused it prints the error on stderr and exits 3.
func writerProcess(path string) int {
	ctx := context.Background()
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, "helper: no start line:", err)
		return 1
	}
	l, err := ledger.Open(ctx, path, ledger.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if errors.Is(err, ledger.ErrLocked) {
			return 3
		}
		return 1
	}
	defer l.Close()
	fmt.Println("locked")
	io.Copy(io.Discard, in) // until the parent closes stdin
	if err := ingestN(ctx, l, "/helper.jsonl", 50); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// ingestN records an input and n conversations in one batch.
func ingestN(ctx context.Context, l *ledger.Ledger, input string, n int) error {
	in, err := l.AddInput(ctx, ledger.Input{Path: input, Format: "openai"})
	if err != nil {
		return err
	}
	kept := make([]*conv.Conversation, n)
	for i := range kept {
		kept[i] = testConv(fmt.Sprintf("c%05d", i), fmt.Sprintf("question %d", i))
	}
	_, err = l.CommitIngest(ctx, ledger.IngestBatch{InputID: in.ID, RecordsDone: int64(n), Finished: true, Kept: kept})
	return err
}

type helper struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr strings.Builder
}

func startHelper(t *testing.T, path string) *helper {
	t.Helper()
	h := &helper{cmd: exec.Command(os.Args[0], "-test.run=^$")}
	h.cmd.Env = append(os.Environ(), helperEnv+"="+path)
	h.cmd.Stderr = &h.stderr
	var err error
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.stdout = bufio.NewReader(out)
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if h.cmd.ProcessState == nil {
			h.cmd.Process.Kill()
			h.cmd.Wait()
		}
	})
	return h
}

func TestTwoWriterProcessesOnlyOneProceeds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.db")
	hs := []*helper{startHelper(t, path), startHelper(t, path)}
	// Release both at once.
	for _, h := range hs {
		if _, err := io.WriteString(h.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	// Each either prints "locked" (and holds the lock until its stdin
	// closes) or exits at once, refused. The winner holds the lock until
	// both outcomes are known, so which one wins is the only thing left to
	// chance.
	type outcome struct {
		i      int
		locked bool
	}
	outcomes := make(chan outcome, len(hs))
	for i, h := range hs {
		go func() {
			line, _ := h.stdout.ReadString('\n')
			outcomes <- outcome{i, strings.TrimSpace(line) == "locked"}
		}()
	}
	winner := -1
	for range hs {
		select {
		case o := <-outcomes:
			if o.locked {
				if winner >= 0 {
					t.Fatal("both processes hold the writer lock")
				}
				winner = o.i
			}
		case <-time.After(time.Minute):
			t.Fatal("helpers did not report within a minute")
		}
	}
	if winner < 0 {
		t.Fatalf("neither process got the lock: %q / %q", hs[0].stderr.String(), hs[1].stderr.String())
	}
	loser := hs[1-winner]
	err := loser.cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("refused process: %v, stderr %q; want exit 3", err, loser.stderr.String())
	}
	msg := strings.TrimSpace(loser.stderr.String())
	host, _ := os.Hostname()
	wantPID := fmt.Sprintf("process %d on host %s", hs[winner].cmd.Process.Pid, host)
	if strings.Count(msg, "\n") != 0 || !strings.Contains(msg, path) || !strings.Contains(msg, wantPID) {
		t.Fatalf("refusal %q: want one line naming %s and %q", msg, path, wantPID)
	}
	hs[winner].stdin.Close()
	if err := hs[winner].cmd.Wait(); err != nil {
		t.Fatalf("winner: %v, stderr %q", err, hs[winner].stderr.String())
	}
	l, err := ledger.Open(context.Background(), path, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if n, err := l.CountConversations(context.Background()); err != nil || n != 50 {
		t.Fatalf("conversations = %d, %v; want the 50 of a single run", n, err)
	}
}

func TestKilledWriterLeavesNoStaleLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.db")
	h := startHelper(t, path)
	io.WriteString(h.stdin, "go\n")
	if line, _ := h.stdout.ReadString('\n'); strings.TrimSpace(line) != "locked" {
		t.Fatalf("helper said %q, stderr %q", line, h.stderr.String())
	}
	ctx := context.Background()
	var le *ledger.LockedError
	if _, err := ledger.Open(ctx, path, ledger.Options{}); !errors.As(err, &le) || le.PID != h.cmd.Process.Pid {
		t.Fatalf("open while the helper holds the lock: %v; want a LockedError naming PID %d", err, h.cmd.Process.Pid)
	}
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.cmd.Wait()
	l, err := ledger.Open(ctx, path, ledger.Options{})
	if err != nil {
		t.Fatalf("open after the holder was killed: %v", err)
	}
	defer l.Close()
	if err := ingestN(ctx, l, "/after-kill.jsonl", 3); err != nil {
		t.Fatal(err)
	}
}

func TestLockInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, path := mustOpen(t)
	if err := ingestN(ctx, l, "/x.jsonl", 5); err != nil {
		t.Fatal(err)
	}
	_, err := ledger.Open(ctx, path, ledger.Options{})
	var le *ledger.LockedError
	if !errors.Is(err, ledger.ErrLocked) || !errors.As(err, &le) {
		t.Fatalf("second writer: %v; want ErrLocked", err)
	}
	host, _ := os.Hostname()
	if le.Path != path || le.PID != os.Getpid() || le.Host != host {
		t.Fatalf("locked error = %+v; want path %s, pid %d, host %s", le, path, os.Getpid(), host)
	}
	// Readers are not locked out while the writer is live.
	r, err := ledger.Open(ctx, path, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open beside a writer: %v", err)
	}
	if n, err := r.CountConversations(ctx); err != nil || n != 5 {
		t.Fatalf("reader sees %d conversations, %v", n, err)
	}
	if _, err := r.Status(ctx); err != nil {
		t.Fatalf("status beside a writer: %v", err)
	}
	r.Close()
	// Closing (twice, as deferred cleanups do) releases it.
	l.Close()
	if err := l.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	l2, err := ledger.Open(ctx, path, ledger.Options{})
	if err != nil {
		t.Fatalf("writer after close: %v", err)
	}
	l2.Close()
}

func TestLockFileUnwritableDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	_, err := ledger.Open(context.Background(), filepath.Join(dir, "run.db"), ledger.Options{})
	if err == nil || !strings.Contains(err.Error(), "lock file") {
		t.Fatalf("open in a read-only directory: %v; want an error about the lock file", err)
	}
}

var errNoSpace = syscall.ENOSPC
