//go:build cgo

package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/mattn/go-sqlite3"
)

func TestClassify(t *testing.T) {
	const path = "/runs/a.db"
	mine := errors.New("the caller's own")
	cases := []struct {
		name     string
		err      error
		damaged  bool
		diskFull bool
		same     error // classify returns exactly this
	}{
		{name: "nil"},
		{name: "corrupt", err: fmt.Errorf("reading x: %w", sqlite3.Error{Code: sqlite3.ErrCorrupt}), damaged: true},
		{name: "not a database", err: sqlite3.Error{Code: sqlite3.ErrNotADB}, damaged: true},
		{name: "malformed, untyped", err: errors.New("reading: database disk image is malformed"), damaged: true},
		{name: "full", err: fmt.Errorf("committing: %w", sqlite3.Error{Code: sqlite3.ErrFull}), diskFull: true},
		{name: "write error with ENOSPC", err: sqlite3.Error{Code: sqlite3.ErrIoErr, SystemErrno: syscall.ENOSPC}, diskFull: true},
		{name: "os ENOSPC", err: &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}, diskFull: true},
		{name: "busy is neither", err: sqlite3.Error{Code: sqlite3.ErrBusy}},
		{name: "caller error passes through", err: callerError{mine}, same: mine},
		{name: "caller ENOSPC is not the run's", err: callerError{syscall.ENOSPC}, same: syscall.ENOSPC},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := classify(path, c.err)
			if c.err == nil {
				if got != nil {
					t.Fatalf("classify(nil) = %v", got)
				}
				return
			}
			if c.same != nil && got != c.same {
				t.Fatalf("classify = %v, want %v unchanged", got, c.same)
			}
			if errors.Is(got, ErrDamaged) != c.damaged || errors.Is(got, ErrDiskFull) != c.diskFull {
				t.Fatalf("classify(%v) = %v: damaged %v disk full %v, want %v %v", c.err, got, errors.Is(got, ErrDamaged), errors.Is(got, ErrDiskFull), c.damaged, c.diskFull)
			}
			if c.damaged || c.diskFull {
				if !strings.HasPrefix(got.Error(), "run file "+path) || !errors.Is(got, c.err) {
					t.Fatalf("%q should name the run file and wrap %v", got, c.err)
				}
				if again := classify(path, got); again != got {
					t.Fatal("classifying twice wrapped again")
				}
			}
		})
	}
}

func TestLockedErrorMessage(t *testing.T) {
	cases := []struct {
		e    LockedError
		want string
	}{
		{LockedError{Path: "r.db", PID: 42, Host: "box"}, "run file r.db is being written by process 42 on host box;"},
		{LockedError{Path: "r.db", PID: 42}, "run file r.db is being written by process 42;"},
		{LockedError{Path: "r.db"}, "run file r.db is being written by another process;"},
	}
	for _, c := range cases {
		if got := c.e.Error(); !strings.HasPrefix(got, c.want) || strings.Contains(got, "\n") {
			t.Errorf("%+v: %q, want one line starting %q", c.e, got, c.want)
		}
		if !errors.Is(&c.e, ErrLocked) {
			t.Errorf("%+v is not ErrLocked", c.e)
		}
	}
}

func TestReadHolder(t *testing.T) {
	cases := []struct {
		text string
		pid  int
		host string
	}{
		{"123 box\n", 123, "box"},
		{"123\n", 123, ""},
		{"", 0, ""},
		{"garbage here", 0, ""},
		{"-5 box", 0, ""},
	}
	for _, c := range cases {
		p := filepath.Join(t.TempDir(), "x.lock")
		os.WriteFile(p, []byte(c.text), 0o644)
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		pid, host := readHolder(f)
		f.Close()
		if pid != c.pid || host != c.host {
			t.Errorf("readHolder(%q) = %d %q, want %d %q", c.text, pid, host, c.pid, c.host)
		}
	}
}

// FuzzCheckHeader: whatever the first bytes of a file, the header check
// answers with nil or a DamagedError and never panics.
func FuzzCheckHeader(f *testing.F) {
	good := append([]byte("SQLite format 3\x00"), make([]byte, 84)...)
	good[16], good[17] = 0x10, 0x00 // 4096
	good[18], good[19], good[21], good[22], good[23] = 2, 2, 64, 32, 32
	f.Add(good, true)
	f.Add([]byte("{\"id\": 1}\n"), false)
	f.Add([]byte{}, true)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte, exclusive bool) {
		p := filepath.Join(dir, "run.db")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		err := checkHeader(p, exclusive)
		var de *DamagedError
		if err != nil && !errors.As(err, &de) {
			t.Fatalf("checkHeader = %v, want nil or a DamagedError", err)
		}
		if len(b) > 0 && len(b) < 100 && err == nil {
			t.Fatalf("a %d-byte file passed the header check", len(b))
		}
	})
}

// FuzzFailureReason: reasons are bounded, valid UTF-8 for valid input, and
// never empty.
func FuzzFailureReason(f *testing.F) {
	for _, s := range []string{"", "turn 3: parsing model answer (3 tries): invalid character 'x'", `endpoint x: 400 "a"`, "'unterminated", "ünïcödé 12 34"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := FailureReason(s)
		if r == "" || utf8.RuneCountInString(r) > maxReason+1 {
			t.Fatalf("FailureReason(%q) = %q", s, r)
		}
		if utf8.ValidString(s) && !utf8.ValidString(r) {
			t.Fatalf("FailureReason(%q) = %q is not valid UTF-8", s, r)
		}
		if FailureReason(s) != r {
			t.Fatal("not deterministic")
		}
	})
}
