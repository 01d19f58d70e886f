package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/memgov"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/run/export"
)

func exportCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "export",
		Usage:       "write conversations, curated contexts, annotations, the quarantine, or training data (SFT, DPO pairs) to Parquet or JSONL",
		Description: export.Help(),
		Flags: []cli.Flag{
			dbFlag(),
			&cli.StringFlag{Name: "what", Required: true, Usage: strings.Join(export.Kinds(), " | ")},
			&cli.StringFlag{Name: "format", Value: string(export.Parquet), Usage: "parquet | jsonl | sft (curated only: OpenAI chat fine-tuning JSONL, weighted, with NAME.meta.jsonl beside it)"},
			&cli.StringFlag{Name: "out", Required: true, Usage: "output file"},
			&cli.StringFlag{Name: "dimension", Value: export.Dimensions()[0], Usage: "preferences, winners: " + strings.Join(export.Dimensions(), " | ")},
			&cli.BoolFlag{Name: "include-inconsistent", Usage: "preferences, winners: also export both-order verdicts where one order was decisive and the other a tie"},
			&cli.StringFlag{Name: "prompt-strategy", Usage: "preferences, winners: curate strategy whose context is the prompt (default: the one the chosen answer was generated from)"},
			&cli.StringFlag{Name: "pairs", Value: export.PairsAll, Usage: "preferences: " + export.PairsAll + " (every decisive verdict) | " + export.PairsSamePrompt + " (only verdicts whose two answers were generated from the same context, the prompt)"},
			&cli.StringFlag{Name: "strategies", Usage: "curated: comma-separated curate strategies to export (default: every one the curate stage ran)"},
			&cli.BoolFlag{Name: "partial", Usage: "export what is done although the work the export reads is unfinished (conversations pending in its stage, an input not read to its end); the closing line says what is missing. Without it such an export is refused (exit 1)"},
			&cli.StringFlag{Name: "train-on", Value: string(export.TrainReplies), Usage: "curated --format sft: which assistant messages have weight 1: " + string(export.TrainReplies) + " (the target and the dataset replies the context kept) | " + string(export.TrainTarget) + " (the target only); text a strategy wrote always has weight 0"},
		},
		Action: func(c *cli.Context) error {
			memoryCeiling(e, memgov.Readers)
			what := c.String("what")
			po := export.PreferenceOptions{Dimension: c.String("dimension"), IncludeInconsistent: c.Bool("include-inconsistent"), PromptStrategy: c.String("prompt-strategy")}
			if c.IsSet("pairs") {
				po.Pairs = c.String("pairs")
			}
			var co export.CuratedOptions
			if c.IsSet("strategies") {
				var err error
				if co.Strategies, err = export.StrategyList(c.String("strategies")); err != nil {
					return fmt.Errorf("--strategies %q: %w", c.String("strategies"), err)
				}
			}
			if c.IsSet("train-on") {
				co.TrainOn = export.TrainOn(c.String("train-on"))
			}
			// run checks the export, these flags' combinations too, before
			// it opens the run file.
			x := run.Export{What: what, Format: c.String("format"), Out: c.String("out"), Preferences: po, Curated: co, Partial: c.Bool("partial")}
			plan := run.Plan{DB: c.String("db"), Exports: []run.Export{x}}
			return execute(c, e, plan, runOptions(e))
		},
	}
}
