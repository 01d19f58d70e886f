package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/run"
)

// A command line ac3 cannot read is one line (exit 1, nothing printed
// besides): the unknown flag or command, the nearest known one when it
// looks misspelt, and the help to read; never the whole help text.
func TestUsageErrorsAreOneLine(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--confg", "x.yaml"}, "unknown flag --confg: did you mean --config? see 'ac3 run --help'"},
		{[]string{"run", "-confg", "x.yaml"}, "unknown flag --confg: did you mean --config? see 'ac3 run --help'"},
		{[]string{"run", "--config", "x.yaml", "--dryrun"}, "unknown flag --dryrun: did you mean --dry-run? see 'ac3 run --help'"},
		{[]string{"run", "--dry", "--config", "x.yaml"}, "unknown flag --dry: did you mean --dry-run? see 'ac3 run --help'"},
		{[]string{"report", "--db", "x.db", "--fromats", "html"}, "unknown flag --fromats: did you mean --formats? see 'ac3 report --help'"},
		{[]string{"llm", "ping", "--rloe", "judge"}, "unknown flag --rloe: did you mean --role? see 'ac3 llm ping --help'"},
		{[]string{"status", "--zzz"}, "unknown flag --zzz for ac3 status; see 'ac3 status --help'"},
		{[]string{"status", "-q"}, "unknown flag -q for ac3 status; see 'ac3 status --help'"},
		{[]string{"run", "--memory-limit", "1GiB", "--config", "x.yaml"},
			"--memory-limit is a flag of ac3: give it before run (ac3 --memory-limit … run); see 'ac3 run --help'"},
		{[]string{"--config", "x.yaml", "run"},
			"--config is a flag of commands, not of ac3: give it after the command (ac3 COMMAND --config …); see 'ac3 --help'"},
		{[]string{"run", "--config", "x.yaml", "--workers", "many"},
			`invalid value "many" for flag --workers: parse error; see 'ac3 run --help'`},
		{[]string{"ingst", "--db", "x.db"}, `unknown command "ingst": did you mean ingest? see 'ac3 --help'`},
		{[]string{"anotate"}, `unknown command "anotate": did you mean annotate? see 'ac3 --help'`},
		{[]string{"frobnicate"}, `unknown command "frobnicate" for ac3; see 'ac3 --help'`},
		{[]string{"help", "ingst"}, `unknown command "ingst": did you mean ingest? see 'ac3 --help'`},
		{[]string{"llm", "pnig"}, `unknown command "pnig": did you mean ping? see 'ac3 llm --help'`},
		{[]string{"export", "--what", "curated"}, "--db and --out are required; see 'ac3 export --help'"},
		{[]string{"report", "--db", "x.db"}, "--out is required; see 'ac3 report --help'"},
		{[]string{"run"}, "--config is required; see 'ac3 run --help'"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errs, err := runApp(t, tc.args...)
			if err == nil || err.Error() != tc.want {
				t.Errorf("err = %v\nwant %s", err, tc.want)
			}
			if code := run.ExitCode(err); code != run.ExitError {
				t.Errorf("exit status %d, want %d", code, run.ExitError)
			}
			if out != "" || errs != "" {
				t.Errorf("printed besides the error:\nstdout %q\nstderr %q", out, errs)
			}
		})
	}
}

// The help stays where it is asked for: ac3 alone, ac3 help [COMMAND], a
// group of commands alone, --help.
func TestHelpStillShows(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "Exit status:"},
		{[]string{"help"}, "Exit status:"},
		{[]string{"help", "run"}, "--dry-run"},
		{[]string{"run", "--help"}, "--dry-run"},
		{[]string{"llm"}, "ping"},
		{[]string{"llm", "help"}, "ping"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			if out := mustRun(t, tc.args...); !strings.Contains(out, tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
		})
	}
}

// The closing lines of the commands that write a report name its
// report.html (and ac3 run still points to ac3 status).
func TestClosingLinesNameTheReport(t *testing.T) {
	db := ingestedRun(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	body := "run: {db: " + db + ", out: " + filepath.Join(dir, "out") + "}\nstages:\n  curate: {strategies: [fc]}\nreport: {formats: [md, html]}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args    []string
		closing []string // the last lines
	}{
		{[]string{"run", "--config", cfg}, []string{
			"== done; the report is " + filepath.Join(dir, "out", "report.html") + ", and 'ac3 status --db " + db + "' shows the run",
			"browse every turn, answer and verdict with 'ac3 view --db " + db + "'; report.html links into it",
		}},
		{[]string{"report", "--db", db, "--out", filepath.Join(dir, "again")},
			[]string{"the report is " + filepath.Join(dir, "again", "report.html")}},
		{[]string{"report", "--db", db, "--out", filepath.Join(dir, "md"), "--formats", "md"},
			[]string{"the report is " + filepath.Join(dir, "md", "report.md")}},
	}
	for _, tc := range tests {
		t.Run(tc.args[0], func(t *testing.T) {
			ls := lines(mustRun(t, tc.args...))
			if got := ls[max(len(ls)-len(tc.closing), 0):]; strings.Join(got, "\n") != strings.Join(tc.closing, "\n") {
				t.Errorf("closing lines %q\nwant %q", got, tc.closing)
			}
		})
	}
}
