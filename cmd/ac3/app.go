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

   ac3 ingest  --db run.db --language English --min-turns 5 --max-turns 10 dump.jsonl.zst
   ac3 curate  --db run.db --strategies fc,ao,lt,de
   ac3 inspect --db run.db --conversation <id> --turn 3
   ac3 export  --db run.db --what curated --format parquet --out curated.parquet
   ac3 status  --db run.db

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
		Commands: append(append(append([]*cli.Command{
			ingestCommand(e),
			convertCommand(e),
			curateCommand(e),
			inspectCommand(e),
			exportCommand(e),
			statusCommand(e),
			retryCommand(e),
			runCommand(e),
			llmCommand(e),
		}, annotateCommands(e)...), ac3Commands(e)...), judgeCommands(e)...),
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
