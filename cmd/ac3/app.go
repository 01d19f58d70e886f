package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/run"
)

// env is what a command may touch outside its arguments; tests supply their
// own.
type env struct {
	stop   <-chan struct{} // closed on the first Ctrl-C
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

// The exit statuses, as the manual states them.
const (
	exitError   = 1 // the command could not do its work
	exitFailed  = 2 // it finished, but some units failed
	exitStopped = 3 // it stopped before the end; run it again to continue
	exitLocked  = 4 // another process is writing the run file; nothing was done
	exitDamaged = 5 // the run file is damaged; 'ac3 doctor' says what can be saved
	exitFull    = 6 // the disk is full; nothing of the failed commit was kept
)

// exitStatus ends the command with a status; err, when set, is printed.
type exitStatus struct {
	code int
	err  error
}

func (e *exitStatus) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return fmt.Sprintf("exit status %d", e.code)
}

func (e *exitStatus) Unwrap() error { return e.err }

const manual = `ac3 turns large logs of multi-turn human–AI conversations (WildChat dumps,
OpenAI chat logs, ShareGPT, Lost in Conversation) into annotated, curated data.

A run is one SQLite file (--db). Every command records what it finished in it,
so any command can be stopped (Ctrl-C, a crash, kill -9) and run again: it
picks up exactly where it stopped and never repeats finished work.

A typical session:

   ac3 ingest   --db run.db --language English --min-turns 5 --max-turns 10 dump.jsonl.zst
   ac3 annotate --db run.db --stages classify,constraints --annotator heuristic
   ac3 curate   --db run.db --strategies fc,ao,lt,de
   ac3 inspect  --db run.db --conversation <id> --turn 3
   ac3 export   --db run.db --what curated --format parquet --out curated.parquet
   ac3 status   --db run.db

With a model endpoint (OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL, or a
config file with endpoints, models and roles) the same run goes further:

   ac3 annotate --db run.db --stages classify,constraints,pollution --annotator llm
   ac3 curate   --db run.db --strategies fc,ao,gated-reset --budget-usd 20
   ac3 respond  --db run.db --strategies fc,ao,gated-reset
   ac3 judge    --db run.db --pairs gated-reset:ao,gated-reset:fc,fc:ao --order both
   ac3 report   --db run.db --out report/

or all of it from one config file:

   ac3 run --config fixtures/configs/wildchat.yaml

Input formats are recognised from their content (and extension): WildChat JSONL
and Parquet, OpenAI chat JSONL, ShareGPT (JSON array or JSONL), Lost in
Conversation sharded JSON, and ac3's own canonical JSONL, Parquet and Arrow IPC.
.zst and .gz files are decompressed on the fly.

Exit status:
   0  done: every unit of work is recorded
   1  the command could not do its work (bad flags or config, unreadable input)
   2  done, but some units failed; the closing line says how many, in which
      stage, and the 'ac3 retry' command that queues them again
   3  stopped before the end: Ctrl-C or SIGTERM, the budget, or a fatal endpoint
      error (a key, a model, a quota); run the same command again to continue
   4  the run file is being written by another process (named with its PID and
      host); nothing was done: wait for it, or stop it, and run again
   5  the run file is damaged; 'ac3 doctor --db RUN.db' checks it and copies
      what is readable into a new run
   6  the disk is full; nothing of the failed commit was kept: free some space
      and run the same command again to continue

The first Ctrl-C lets work in flight finish and be recorded; a second one
abandons it (it runs again on resume); a third quits at once.`

func newApp(e *env) *cli.App {
	app := &cli.App{
		Name:                 "ac3",
		Usage:                "annotate, curate and judge large logs of multi-turn conversations",
		Description:          manual,
		Writer:               e.stdout,
		ErrWriter:            e.stderr,
		EnableBashCompletion: true,
		HideHelpCommand:      true,
		// In the order a run uses them, then the tools around runs.
		Commands: []*cli.Command{
			ingestCommand(e),
			annotateCommand(e),
			curateCommand(e),
			inspectCommand(e),
			respondCommand(e),
			judgeCommand(e),
			reportCommand(e),
			exportCommand(e),
			runCommand(e),
			mergeCommand(e),
			statusCommand(e),
			doctorCommand(e),
			retryCommand(e),
			convertCommand(e),
			llmCommand(e),
			batchCommand(e),
			evalHeuristicsCommand(e),
			policyCommand(e),
			memoryCommand(e),
		},
	}
	app.ExitErrHandler = func(*cli.Context, error) {} // main maps errors to exit codes
	return app
}

var dbFlag = &cli.StringFlag{Name: "db", Usage: "the run file (SQLite); created if missing", Required: true, EnvVars: []string{"AC3_DB"}}

func runOptions(e *env) run.Options {
	return run.Options{Stop: e.stop, Log: e.stdout, Progress: e.stderr}
}

// execute runs plan and turns its outcome into the command's closing line
// and exit status (see the manual).
func execute(c *cli.Context, e *env, plan run.Plan, opts run.Options) error {
	plan, err := withShard(c, e, plan)
	if err != nil {
		return err
	}
	res, err := run.Execute(c.Context, plan, opts)
	switch {
	case errors.Is(err, context.Canceled):
		return &exitStatus{code: exitStopped} // the second Ctrl-C; main said so
	case run.IsStop(err):
		return &exitStatus{code: exitStopped, err: fmt.Errorf("stopped: %w; fix the cause and run the same command again to continue", err)}
	case err != nil:
		return err
	}
	if res.Stopped {
		return &exitStatus{code: exitStopped}
	}
	if failed := res.FailedTasks(); len(failed) > 0 {
		var n int64
		var where []string
		for _, s := range failed {
			n += s.Failed
			where = append(where, fmt.Sprintf("%s %d", s.Stage, s.Failed))
		}
		retry := "ac3 retry --db " + plan.DB
		if len(failed) == 1 {
			retry += " --stage " + failed[0].Stage
		}
		fmt.Fprintf(e.stdout, "%d tasks have failed units (%s); each keeps its error and the model's raw answer, and '%s' queues them again\n", n, strings.Join(where, ", "), retry)
		return &exitStatus{code: exitFailed}
	}
	return nil
}

// exitCode maps a command's error to the process's exit status.
func exitCode(err error) int {
	var es *exitStatus
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ledger.ErrLocked):
		return exitLocked
	case errors.Is(err, ledger.ErrDamaged):
		return exitDamaged
	case errors.Is(err, ledger.ErrDiskFull):
		return exitFull
	case errors.As(err, &es):
		return es.code
	case run.IsStop(err):
		return exitStopped
	}
	return exitError
}

// openRun opens the run named by --db (or the first argument), for the
// commands that read or fix a run rather than run stages on it.
func openRun(c *cli.Context, readOnly bool) (*ledger.Ledger, error) {
	path := cmpOr(c.String("db"), c.Args().First())
	if path == "" {
		return nil, fmt.Errorf("no run file: pass --db RUN.db")
	}
	return ledger.Open(c.Context, path, ledger.Options{ReadOnly: readOnly})
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

// cmpOr is v, or def when v is the zero value.
func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// errorLine is the one line main prints for a command's error. A refused
// writer, a damaged run file and a full disk are said by the run file's own
// error, whatever the command was doing when it met them: the wrapping adds
// nothing the user can act on.
func errorLine(err error) string {
	var (
		le *ledger.LockedError
		de *ledger.DamagedError
		fe *ledger.DiskFullError
	)
	msg := err.Error()
	switch {
	case errors.As(err, &le):
		msg = le.Error()
	case errors.As(err, &de):
		msg = de.Error()
		if !strings.Contains(msg, "ac3 doctor") {
			msg += fmt.Sprintf("; try 'ac3 doctor --db %s'", de.Path)
		}
	case errors.As(err, &fe):
		msg = fe.Error()
	default:
		return msg
	}
	return strings.Join(strings.Fields(msg), " ")
}
