package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/run"
)

// The run file's own failures each have their exit status and one line,
// however deep the command wrapped them.
func TestRunFileErrorsHaveTheirStatusAndOneLine(t *testing.T) {
	wrap := func(err error) error {
		return fmt.Errorf("curate: committing tasks: %w", fmt.Errorf("writing batch 3: %w", err))
	}
	tests := []struct {
		name string
		err  error
		code int
		want []string
		not  []string
	}{
		{"locked", wrap(&ledger.LockedError{Path: "r.db", PID: 4242, Host: "box"}), run.ExitLocked,
			[]string{"run file r.db is being written by process 4242 on host box"}, []string{"curate:", "batch 3"}},
		{"damaged", wrap(&ledger.DamagedError{Path: "r.db", Err: errors.New("reading units: database disk image is malformed")}), run.ExitDamaged,
			[]string{"run file r.db is damaged: reading units: database disk image is malformed", "try 'ac3 doctor --db r.db'"}, []string{"curate:"}},
		{"damaged, multi-line cause", &ledger.DamagedError{Path: "r.db", Err: errors.New("integrity check:\n*** page 7\n")}, run.ExitDamaged,
			[]string{"run file r.db is damaged: integrity check: *** page 7", "ac3 doctor --db r.db"}, nil},
		{"disk full", wrap(&ledger.DiskFullError{Path: "r.db", Err: syscall.ENOSPC}), run.ExitFull,
			[]string{"run file r.db: disk full", "free some space and run the same command again"}, []string{"curate:"}},
		{"ordinary", errors.New("--annotator \"x\": want heuristic or llm"), run.ExitError,
			[]string{"--annotator \"x\""}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := run.ExitCode(tc.err); got != tc.code {
				t.Errorf("exit status %d, want %d", got, tc.code)
			}
			line := run.ErrorLine(tc.err)
			if strings.Contains(line, "\n") {
				t.Errorf("more than one line: %q", line)
			}
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("line %q lacks %q", line, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(line, w) {
					t.Errorf("line %q has %q", line, w)
				}
			}
		})
	}
}

// Every command meets a run file damaged in the middle with the damage
// line and status 5 — never "nothing to do".
func TestEveryCommandRefusesADamagedRun(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "run.db")
	mustRun(t, "ingest", "--db", db, repoPath("fixtures", "wildchat", "wildchat-1m-sample10.jsonl"))
	mustRun(t, "curate", "--db", db, "--strategies", "fc,ao")
	st, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(db, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xa5, 0x5a, 0x00, 0xff}, 3*page/4), st.Size()/2/page*page); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, args := range [][]string{
		{"curate", "--db", db, "--strategies", "fc,ao,lt"},
		{"status", "--db", db},
		{"export", "--db", db, "--what", "curated", "--format", "jsonl", "--out", filepath.Join(dir, "c.jsonl")},
		{"report", "--db", db, "--out", filepath.Join(dir, "report")},
		{"annotate", "--db", db},
	} {
		out, _, err := runApp(t, args...)
		if code := run.ExitCode(err); code != run.ExitDamaged {
			t.Errorf("ac3 %s: status %d (%v), want %d\n%s", args[0], code, err, run.ExitDamaged, out)
			continue
		}
		line := run.ErrorLine(err)
		if !strings.HasPrefix(line, "run file "+db+" is damaged") || !strings.Contains(line, "ac3 doctor --db "+db) {
			t.Errorf("ac3 %s: %q, want the damage line naming the file and doctor", args[0], line)
		}
		if strings.Contains(out, "nothing to do") {
			t.Errorf("ac3 %s said nothing to do:\n%s", args[0], out)
		}
	}
}

func TestManualDocumentsRunFileStatuses(t *testing.T) {
	out := mustRun(t, "--help")
	for _, want := range []string{"4  the run file is being written by another process", "5  the run file is damaged", "6  the disk is full"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	readme, err := os.ReadFile(repoPath("README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| 4 |", "| 5 |", "| 6 |"} {
		if !bytes.Contains(readme, []byte(want)) {
			t.Errorf("README's exit status table lacks %q", want)
		}
	}
}
