//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly || solaris || illumos

package atomicfile_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ac3/ac3/io/atomicfile"
)

// writerEnv makes the test binary a writer that starts the file named by
// it, says the temporary file's name and waits to be killed (or for its
// stdin to close, so it never outlives the test).
const writerEnv = "AC3_ATOMICFILE_WRITER"

func TestMain(m *testing.M) {
	if path := os.Getenv(writerEnv); path != "" {
		f, err := atomicfile.Create(path)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		f.WriteString("half an export")
		fmt.Println(f.Name())
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startWriter starts a writer process of path and returns it with its
// temporary file, once the file exists.
func startWriter(t *testing.T, path string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), writerEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(filepath.Base(strings.TrimSpace(line)), ".out.jsonl.tmp-") {
		t.Fatalf("writer said %q (%v)", line, err)
	}
	return cmd, strings.TrimSpace(line)
}

func exists(t *testing.T, p string) bool {
	t.Helper()
	_, err := os.Stat(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

// A writer killed with SIGKILL leaves its temporary file; the next write of
// the same name removes it, and never the file of a writer still alive.
func TestTheNextWriteRemovesAKilledWritersTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.jsonl")
	killed, orphan := startWriter(t, path)
	_, live := startWriter(t, path)

	// While both live, nothing of theirs is touched.
	f, err := atomicfile.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Abort(); err != nil {
		t.Fatal(err)
	}
	if !exists(t, orphan) || !exists(t, live) {
		t.Fatal("a live writer's temporary file was removed")
	}

	if err := killed.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed.Wait() // the process is gone, and its lock with it
	if !exists(t, orphan) {
		t.Fatal("the killed writer left nothing behind: the test shows nothing")
	}
	f, err = atomicfile.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("whole\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if exists(t, orphan) {
		t.Errorf("the killed writer's %s is still there", filepath.Base(orphan))
	}
	if !exists(t, live) {
		t.Errorf("the live writer's %s was removed", filepath.Base(live))
	}
}

// The clean-up is of the name written only, and of files of older versions
// (no lock to tell) only when they have gone unwritten for a day.
func TestOrphanCleanUpKeepsWhatItCannotTell(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.jsonl")
	old := time.Now().Add(-48 * time.Hour)
	files := []struct {
		name    string
		mtime   time.Time
		removed bool
	}{
		{".out.jsonl.tmp-123.part", time.Now(), true},        // nobody holds it
		{".out.jsonl.tmp-456", old, true},                    // an older ac3's, untouched for two days
		{".out.jsonl.tmp-789", time.Now(), false},            // an older ac3's, perhaps still written
		{".other.jsonl.tmp-123.part", time.Now(), false},     // another output's
		{".out.jsonl.tmp-123.part.bak", old, false},          // not a name Create makes
		{"out.jsonl.tmp-1.part", old, false},                 // not hidden: not ours
		{".out.jsonl.tmp-notdigits.part", time.Now(), false}, // not a name Create makes
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, f.mtime, f.mtime); err != nil {
			t.Fatal(err)
		}
	}
	a, err := atomicfile.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Abort()
	// A second writer of the same path in this process leaves the first's.
	b, err := atomicfile.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Abort()
	if !exists(t, a.Name()) {
		t.Fatal("a second Create removed the first writer's temporary file")
	}
	for _, f := range files {
		if got := !exists(t, filepath.Join(dir, f.name)); got != f.removed {
			t.Errorf("%s: removed %v, want %v", f.name, got, f.removed)
		}
	}
	if err := a.Commit(); err != nil {
		t.Errorf("the first writer's commit: %v", err)
	}
	names := entries(t, dir)
	if !slices.Contains(names, "out.jsonl") {
		t.Errorf("after the commit the directory holds %v", names)
	}
}
