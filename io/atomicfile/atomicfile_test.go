package atomicfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/io/atomicfile"
)

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestCommitMovesACompleteFileIntoPlace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.jsonl")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := atomicfile.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("new\n"); err != nil {
		t.Fatal(err)
	}
	// Until the commit, readers see the old file and a hidden temporary.
	if b, _ := os.ReadFile(path); string(b) != "old\n" {
		t.Fatalf("before commit the path holds %q", b)
	}
	if es := entries(t, dir); len(es) != 2 || !strings.HasPrefix(es[0], ".out.jsonl.tmp-") {
		t.Fatalf("before commit the directory holds %v", es)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new\n" {
		t.Fatalf("after commit the path holds %q", b)
	}
	if es := entries(t, dir); len(es) != 1 {
		t.Fatalf("after commit the directory holds %v", es)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	if err := f.Commit(); err == nil {
		t.Error("a second commit succeeded")
	}
	if err := f.Abort(); err != nil {
		t.Errorf("abort after commit: %v", err)
	}
}

func TestAbortLeavesNothingBehind(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.parquet")
	f, err := atomicfile.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("half a file"); err != nil {
		t.Fatal(err)
	}
	if err := f.Abort(); err != nil {
		t.Fatal(err)
	}
	if es := entries(t, dir); len(es) != 0 {
		t.Fatalf("after abort the directory holds %v", es)
	}
	if err := f.Abort(); err != nil {
		t.Errorf("second abort: %v", err)
	}
}

func TestTwoWritersOfOnePathDoNotShareATemporaryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.arrow")
	a, err := atomicfile.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Abort()
	b, err := atomicfile.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Abort()
	if a.Name() == b.Name() {
		t.Fatalf("both writers use %s", a.Name())
	}
}

// A missing folder is created; a folder that cannot be (its parent is a
// file) is an error naming the output.
func TestCreateMakesAMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "out.jsonl")
	f, err := atomicfile.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("x\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "x\n" {
		t.Fatalf("read back %q, %v", b, err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := atomicfile.Create(filepath.Join(file, "out.jsonl")); err == nil || !strings.Contains(err.Error(), "out.jsonl") {
		t.Fatalf("err = %v, want one naming the output", err)
	}
}
