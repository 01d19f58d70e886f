package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/export"
	"github.com/ac3/ac3/pipeline/ledger"
)

var exportWhats = []string{"conversations", "curated", "quarantine"}

func exportKind(what, format string) (export.Format, error) {
	ok := false
	for _, w := range exportWhats {
		ok = ok || w == what
	}
	if !ok {
		return "", fmt.Errorf("unknown export %q: want one of %s", what, strings.Join(exportWhats, ", "))
	}
	return export.ParseFormat(format)
}

func exportCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "export",
		Usage: "write conversations, curated contexts or the quarantine to Parquet or JSONL",
		Description: `--what conversations   the kept conversations in the canonical schema: id, source_file,
                       source_line, source_row, format, system, messages (a list of
                       {role, content} structs), language, toxic, redacted, meta (JSON text)
--what curated         one row per conversation, turn and strategy: conversation_id, turn,
                       strategy, version, messages (the curated context), tokens,
                       n_messages, target (the dataset's own next assistant message)
--what quarantine      every bad record: input, file, line, row, reason, detail, excerpt

Parquet files read directly in pandas, pyarrow, DuckDB and Hugging Face datasets.
JSONL is compressed when --out ends in .zst or .gz. Rows come in ingest order, so
an export of a resumed run is byte-identical to one of an uninterrupted run. The
file appears only when complete.

Examples:
   ac3 export --db run.db --what curated --format parquet --out curated.parquet
   ac3 export --db run.db --what conversations --format jsonl --out kept.jsonl.zst
   ac3 export --db run.db --what quarantine --format jsonl --out bad.jsonl`,
		Flags: []cli.Flag{
			dbFlag,
			&cli.StringFlag{Name: "what", Required: true, Usage: strings.Join(exportWhats, " | ")},
			&cli.StringFlag{Name: "format", Value: "parquet", Usage: "parquet | jsonl"},
			&cli.StringFlag{Name: "out", Required: true, Usage: "output file"},
		},
		Action: func(c *cli.Context) error {
			l, err := openRun(c.Context, c, true)
			if err != nil {
				return err
			}
			defer l.Close()
			return runExport(c.Context, e, l, c.String("what"), c.String("format"), c.String("out"))
		},
	}
}

func runExport(ctx context.Context, e *env, l *ledger.Ledger, what, format, out string) error {
	f, err := exportKind(what, format)
	if err != nil {
		return err
	}
	var n int64
	switch what {
	case "conversations":
		n, err = export.Conversations(ctx, l, f, out)
	case "curated":
		n, err = export.Curated(ctx, l, f, out)
	case "quarantine":
		n, err = export.Quarantine(ctx, l, f, out)
	}
	if err != nil {
		return fmt.Errorf("exporting %s: %w", what, err)
	}
	fmt.Fprintf(e.stdout, "wrote %d %s rows to %s\n", n, what, out)
	return nil
}
