package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/run"
)

func batchCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "batch",
		Usage:       "manage a run's batches and batch files",
		Description: run.BatchHelp(),
		Subcommands: []*cli.Command{
			{
				Name:  "cancel",
				Usage: "cancel the run's live batches (their answers so far are imported on the next run)",
				Flags: append(llmFlags(), dbFlag()),
				Action: func(c *cli.Context) error {
					_, m, err := modelFlags(c, e)
					if err != nil {
						return err
					}
					n, err := run.CancelBatches(c.Context, c.String("db"), m)
					if err != nil {
						return err
					}
					fmt.Fprintf(e.stdout, "cancelled %d batches\n", n)
					return nil
				},
			},
			{
				Name:  "export",
				Usage: "write the requests waiting for a batch as a batch input file (OpenAI batch JSONL, as vllm run_batch reads)",
				Flags: []cli.Flag{dbFlag(),
					&cli.StringFlag{Name: "stage", Usage: "only this stage's requests (default: all)"},
					&cli.StringFlag{Name: "out", Usage: "the file to write", Required: true},
				},
				Action: func(c *cli.Context) error {
					n, err := run.ExportBatch(c.Context, c.String("db"), c.String("stage"), c.String("out"))
					if err != nil {
						return err
					}
					fmt.Fprintf(e.stdout, "wrote %d requests to %s\n", n, c.String("out"))
					return nil
				},
			},
			{
				Name:      "import",
				Usage:     "import a batch results file (OpenAI batch output format) into the run's cache",
				ArgsUsage: "RESULTS.jsonl",
				Flags:     append(llmFlags(), dbFlag()),
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return fmt.Errorf("batch import: pass one results file")
					}
					_, m, err := modelFlags(c, e)
					if err != nil {
						return err
					}
					st, err := run.ImportBatch(c.Context, c.String("db"), m, c.Args().First())
					if err != nil {
						return err
					}
					st.WriteText(e.stdout)
					return nil
				},
			},
		},
	}
}
