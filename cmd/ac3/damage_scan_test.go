package main

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/run"
)

// readerCommand is one command of the damage scan that reads a finished run
// and writes what it read: out names the files to compare (relative to the
// copy's folder), empty for a command compared by its stdout.
type readerCommand struct {
	name string
	args func(db, dir string) []string
	out  []string
}

func damageScanCommands() []readerCommand {
	export := func(what string) readerCommand {
		file := what + ".jsonl"
		return readerCommand{
			name: "export " + what,
			args: func(db, dir string) []string {
				return []string{"export", "--db", db, "--what", what, "--format", "jsonl", "--out", filepath.Join(dir, file)}
			},
			out: []string{file},
		}
	}
	return []readerCommand{
		export("curated"),
		export("preferences"),
		export("winners"),
		export("annotations"),
		export("conversations"),
		{name: "report", args: func(db, dir string) []string {
			return []string{"report", "--db", db, "--out", filepath.Join(dir, "report")}
		}, out: []string{"report/report.md", "report/report.json"}},
		{name: "status", args: func(db, dir string) []string { return []string{"status", "--db", db, "--json"} }},
	}
}

// TestDamagedRunFileNeverExportsWrongData flips 64 bytes at 150 seeded
// places of a finished end-to-end run file, one place per copy, and runs
// every reading command on each copy: each must either write exactly what
// it writes from the intact file, or stop with exit status 5 (damaged). A
// command that exits 0 with different output fails the test. The test also
// fails if no flip was caught at all (the scan would prove nothing).
func TestDamagedRunFileNeverExportsWrongData(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an end-to-end run and reads 150 damaged copies of it")
	}
	srv := startScripted(t)
	dir := t.TempDir()
	cfgPath := e2eConfig(t, dir, "5")
	vars := map[string]string{"AC3_E2E_BASE_URL": srv.URL}
	if out, err := runAppEnv(t, vars, "run", "--config", cfgPath); err != nil {
		t.Fatalf("ac3 run: %v\n%s", err, out)
	}
	src := filepath.Join(dir, "e2e.db")
	if _, err := os.Stat(src + "-wal"); err == nil {
		t.Fatal("the finished run left a write-ahead log; the scan needs the file at rest")
	}
	intact, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	cmds := damageScanCommands()

	// run runs every command on the run file in folder d, each facing the
	// file afresh (a damage note left by one would make the next refuse
	// without reading), and returns per command its exit status and its
	// output.
	runCmd := func(d string) (codes []int, outs [][]byte) {
		db := filepath.Join(d, "run.db")
		for _, c := range cmds {
			os.Remove(db + ledger.DamageSuffix)
			out, err := runAppEnv(t, nil, c.args(db, d)...)
			code := run.ExitCode(err)
			var got []byte
			if code == 0 {
				if len(c.out) == 0 {
					// The folder differs from copy to copy.
					got = []byte(strings.ReplaceAll(out, d, "DIR"))
				}
				for _, f := range c.out {
					b, err := os.ReadFile(filepath.Join(d, f))
					if err != nil {
						t.Fatalf("%s exited 0 without writing %s: %v", c.name, f, err)
					}
					got = append(got, b...)
				}
			} else if !errors.Is(err, ledger.ErrDamaged) {
				var se sqlite3.Error
				errors.As(err, &se)
				t.Errorf("%s in %s: exit %d, not the damaged status: %v (%d/%d)", c.name, d, code, err, se.Code, se.ExtendedCode)
			}
			codes, outs = append(codes, code), append(outs, got)
		}
		return codes, outs
	}

	refDir := filepath.Join(dir, "intact")
	if err := os.MkdirAll(refDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(refDir, "run.db"), intact, 0o644); err != nil {
		t.Fatal(err)
	}
	refCodes, refOuts := runCmd(refDir)
	for i, c := range cmds {
		if refCodes[i] != 0 || len(refOuts[i]) == 0 {
			t.Fatalf("%s on the intact run: exit %d, %d bytes", c.name, refCodes[i], len(refOuts[i]))
		}
	}
	// Reading the same file twice gives the same bytes, or the scan
	// could not tell damage from noise.
	if _, again := runCmd(refDir); !equalOuts(refOuts, again) {
		t.Fatal("the reading commands do not give the same output twice on the intact run")
	}

	const places = 150
	rng := rand.New(rand.NewPCG(26, 150)) // fixed: the same places every run
	var caught, unchanged int
	perCommand := make([]struct{ caught, same int }, len(cmds))
	for p := 0; p < places; p++ {
		off := rng.Int64N(int64(len(intact) - 64))
		b := bytes.Clone(intact)
		for i := range 64 {
			b[off+int64(i)] ^= byte(1 + rng.IntN(255))
		}
		d := filepath.Join(dir, fmt.Sprintf("copy-%03d", p))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "run.db"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		codes, outs := runCmd(d)
		any := false
		for i, c := range cmds {
			switch {
			case codes[i] != 0:
				perCommand[i].caught++
				any = true
			case !bytes.Equal(outs[i], refOuts[i]):
				t.Errorf("flip at byte %d (page %d): %s exited 0 with output that differs from the intact run's (%d bytes, intact %d)", off, off/4096+1, c.name, len(outs[i]), len(refOuts[i]))
			default:
				perCommand[i].same++
			}
		}
		if any {
			caught++
		} else {
			unchanged++
		}
		os.RemoveAll(d)
	}
	var lines []string
	for i, c := range cmds {
		lines = append(lines, fmt.Sprintf("%s: %d stopped with exit 5, %d identical", c.name, perCommand[i].caught, perCommand[i].same))
	}
	t.Logf("%d places in a %d-byte run file: %d copies stopped a command with exit 5, %d left every output identical\n%s", places, len(intact), caught, unchanged, strings.Join(lines, "\n"))
	if caught == 0 {
		t.Fatal("no flip was caught: the scan did not reach the pages the commands read")
	}
}

func equalOuts(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// TestRunThatDoesNotAddUpStopsTheReaders removes one conversation from a
// finished run behind ac3's back (its units and tasks stay): the exports
// that read those units stop with exit 5 saying the run does not add up,
// instead of panicking or writing fewer rows, and doctor finds the orphans.
func TestRunThatDoesNotAddUpStopsTheReaders(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "run.db")
	for _, args := range [][]string{
		{"ingest", "--db", db, filepath.Join("..", "..", "fixtures", "wildchat", "wildchat-1m-sample10.jsonl")},
		{"annotate", "--db", db, "--stages", "classify,constraints", "--annotator", "heuristic"},
		{"curate", "--db", db, "--strategies", "fc,ao"},
	} {
		if out, err := runAppEnv(t, nil, args...); err != nil {
			t.Fatalf("%s: %v\n%s", args[0], err, out)
		}
	}
	h, err := sql.Open("sqlite3", "file:"+db) // foreign keys off, as any other tool has them
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Exec(`DELETE FROM conversations WHERE seq = (SELECT min(conv_seq) FROM units WHERE stage = 'curate')`); err != nil {
		t.Fatal(err)
	}
	h.Close()
	for _, what := range []string{"curated", "annotations"} {
		os.Remove(db + ledger.DamageSuffix)
		out, err := runAppEnv(t, nil, "export", "--db", db, "--what", what, "--format", "jsonl", "--out", filepath.Join(dir, what+".jsonl"))
		if run.ExitCode(err) != run.ExitDamaged || !strings.Contains(err.Error(), "does not add up") {
			t.Fatalf("export %s of a run missing a conversation: exit %d, %v\n%s", what, run.ExitCode(err), err, out)
		}
		if _, err := os.Stat(filepath.Join(dir, what+".jsonl")); err == nil {
			t.Fatalf("export %s left a file behind", what)
		}
	}
	os.Remove(db + ledger.DamageSuffix)
	out, err := runAppEnv(t, nil, "doctor", "--db", db)
	if err == nil || !strings.Contains(out, "rows of tasks refer to rows of conversations") {
		t.Fatalf("doctor on a run missing a conversation: %v\n%s", err, out)
	}
}
