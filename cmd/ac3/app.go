package main

import (
	"cmp"
	_ "embed"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/memgov"
	"github.com/ac3/ac3/run"
)

// env is what a command may touch outside its arguments; tests supply their
// own.
type env struct {
	stop   <-chan struct{} // closed on the first Ctrl-C
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	// setMemoryLimit sets the process's soft memory limit; nil in tests,
	// which share one process.
	setMemoryLimit func(int64)
	// governInterval is how often the memory governor samples the process;
	// 0 (tests) applies its ceilings but never starts it.
	governInterval time.Duration
	memory         *memgov.Governor // nil when a fixed limit (or none) applies
}

// manual is the text of 'ac3 --help': what a run is, a typical session, the
// exit statuses.
//
//go:embed manual.txt
var manual string

func newApp(e *env) *cli.App {
	app := &cli.App{
		Name:                 "ac3",
		Usage:                "annotate, curate and judge large logs of multi-turn conversations",
		Description:          strings.TrimSuffix(manual, "\n"),
		Writer:               e.stdout,
		ErrWriter:            e.stderr,
		EnableBashCompletion: true,
		HideHelpCommand:      true,
		Flags:                []cli.Flag{memoryLimitFlag},
		// A limit given on the command line holds for every command; by
		// default the governor starts under the writers' ceiling, which the
		// readers and ingest replace with their own (memoryCeiling).
		Before: func(c *cli.Context) error { return startMemoryLimit(c, e) },
		// In the order a run uses them, then the tools around runs.
		Commands: []*cli.Command{
			ingestCommand(e), annotateCommand(e), curateCommand(e), inspectCommand(e), respondCommand(e),
			judgeCommand(e), reportCommand(e), exportCommand(e), runCommand(e), mergeCommand(e),
			statusCommand(e), viewCommand(e), doctorCommand(e), retryCommand(e), convertCommand(e),
			llmCommand(e), batchCommand(e), evalHeuristicsCommand(e), policyCommand(e), memoryCommand(e),
		},
	}
	app.ExitErrHandler = func(*cli.Context, error) {} // main maps errors to exit codes
	// A misspelt flag or command gets one line with the nearest name
	// instead of the whole help (usage.go).
	app.OnUsageError, app.Action = usageError, groupAction
	withUsageErrors(app.Commands)
	return app
}

// dbFlag is the --db flag every run command takes; a new one each time, as
// withUsageErrors rewrites the flags it is given.
func dbFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "db", Usage: "the run file (SQLite); created if missing", Required: true, EnvVars: []string{"AC3_DB"}}
}

func runOptions(e *env) run.Options {
	return run.Options{Stop: e.stop, Log: e.stdout, Progress: e.stderr}
}

// execute runs plan and turns its outcome into the command's closing line
// and exit status (see the manual).
func execute(c *cli.Context, e *env, plan run.Plan, opts run.Options) error {
	_, err := executeResult(c, e, plan, opts)
	return err
}

// executeResult is execute with what the run did, for the commands whose
// closing line names what they wrote.
func executeResult(c *cli.Context, e *env, plan run.Plan, opts run.Options) (run.Result, error) {
	plan, err := withShard(c, e, plan)
	if err != nil {
		return run.Result{}, err
	}
	res, err := run.Execute(c.Context, plan, opts)
	// The run's failed units, not just this pass's, decide the status.
	return res, run.Finish(res, err, e.stdout, plan.DB, c.Bool(acceptFailedFlag.Name))
}

// acceptFailedFlag lets a command whose stages have failed units end with
// status 0: the units stay failed (and are left out of what reads them)
// until 'ac3 retry' queues them again.
var acceptFailedFlag = &cli.BoolFlag{Name: "accept-failed", Usage: "end with status 0 although units of the stages this command covers are recorded as failed (by this pass or an earlier one); they stay failed, and 'ac3 retry' still queues them again. Without it such a command exits 2, on every pass, until they are retried"}

// openReader opens the run for a command that only reads it, under the
// readers' memory ceiling.
func openReader(c *cli.Context, e *env) (*ledger.Ledger, error) {
	memoryCeiling(e, memgov.Readers)
	return openRun(c, true)
}

// openRun opens the run named by --db (or the first argument), for the
// commands that read or fix a run rather than run stages on it.
func openRun(c *cli.Context, readOnly bool) (*ledger.Ledger, error) {
	path, err := runPath(c)
	if err != nil {
		return nil, err
	}
	return ledger.Open(c.Context, path, ledger.Options{ReadOnly: readOnly, Log: c.App.ErrWriter})
}

// runPath is the run file named by --db, else the first argument.
func runPath(c *cli.Context) (string, error) {
	if path := cmp.Or(c.String("db"), c.Args().First()); path != "" {
		return path, nil
	}
	return "", fmt.Errorf("no run file: pass --db RUN.db")
}

func splitList(s []string) []string {
	var out []string
	for _, v := range s {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}
