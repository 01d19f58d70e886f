package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/export"
	"github.com/ac3/ac3/pipeline/run"
)

func exportCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "export",
		Usage:       "write conversations, curated contexts, the quarantine, or judged training pairs to Parquet or JSONL",
		Description: export.Help(),
		Flags: []cli.Flag{
			dbFlag,
			&cli.StringFlag{Name: "what", Required: true, Usage: strings.Join(export.Kinds(), " | ")},
			&cli.StringFlag{Name: "format", Value: string(export.Parquet), Usage: "parquet | jsonl | sft (curated only)"},
			&cli.StringFlag{Name: "out", Required: true, Usage: "output file"},
			&cli.StringFlag{Name: "dimension", Value: export.Dimensions()[0], Usage: "preferences, winners: " + strings.Join(export.Dimensions(), " | ")},
			&cli.BoolFlag{Name: "include-inconsistent", Usage: "preferences, winners: also export both-order verdicts where one order was decisive and the other a tie"},
			&cli.StringFlag{Name: "prompt-strategy", Usage: "preferences, winners: curate strategy whose context is the prompt (default: the one the chosen answer was generated from)"},
		},
		Action: func(c *cli.Context) error {
			memoryCeiling(e, readerMemoryLimit)
			po := export.PreferenceOptions{Dimension: c.String("dimension"), IncludeInconsistent: c.Bool("include-inconsistent"), PromptStrategy: c.String("prompt-strategy")}
			if !slices.Contains(export.Dimensions(), po.Dimension) {
				return fmt.Errorf("--dimension %q: want %s", po.Dimension, strings.Join(export.Dimensions(), ", "))
			}
			plan := run.Plan{DB: c.String("db"), Exports: []run.Export{{What: c.String("what"), Format: c.String("format"), Out: c.String("out"), Preferences: po}}}
			return execute(c, e, plan, runOptions(e))
		},
	}
}
