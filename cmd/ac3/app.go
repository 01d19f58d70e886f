package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/ledger"
)

// env is what a command may touch outside its arguments; tests supply their
// own.
type env struct {
	stop   <-chan struct{} // closed on the first Ctrl-C
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

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
.zst and .gz files are decompressed on the fly.`

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
			statusCommand(e),
			doctorCommand(e),
			retryCommand(e),
			convertCommand(e),
			llmCommand(e),
			evalHeuristicsCommand(e),
			policyCommand(e),
			memoryCommand(e),
		},
	}
	app.ExitErrHandler = func(*cli.Context, error) {} // main maps errors to exit codes
	return app
}

var dbFlag = &cli.StringFlag{Name: "db", Usage: "the run file (SQLite); created if missing", Required: true, EnvVars: []string{"AC3_DB"}}

// openRun opens the run named by --db (or the first argument).
func openRun(ctx context.Context, c *cli.Context, readOnly bool) (*ledger.Ledger, error) {
	path := c.String("db")
	if path == "" {
		path = c.Args().First()
	}
	if path == "" {
		return nil, fmt.Errorf("no run file: pass --db RUN.db")
	}
	return ledger.Open(ctx, path, ledger.Options{ReadOnly: readOnly})
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
