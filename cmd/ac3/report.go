package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/judge/report"
	"github.com/ac3/ac3/pipeline/run"
)

func reportCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "report",
		Usage: "write report.html, report.md and report.json for a run",
		Description: `Reads the run and writes, into --out:

   report.json  every number with its n, interval, test, bootstrap seed, prompt
                versions, models and endpoint names (never keys)
   report.md    the same tables in Markdown, for a paper or a pull request
   report.html  one self-contained page with charts (inline SVG, opens offline):
                win rates with interval bars per pair, turn type and round;
                context tokens per strategy by round; gate-open rates; cost by role

Win rate = (wins + ties/2) / n for strategy A of each pair. Intervals resample
whole conversations (turns of one conversation are correlated); Wilson is given
for reference; the sign test is exact. Small samples are flagged next to the
number, never hidden. The bootstrap seed defaults to the seed the judge ran with.

Beside each pair: the comparisons settled as ties without a call (identical
answers) and how many came from both strategies building the same context; per
dimension, the length-controlled win rate (the verdict modelled on the answers'
length difference and read at equal length, as AlpacaEval 2 does, with a
conversation-bootstrap interval); the exact McNemar test between two arms judged
against the same reference on the same turns (ties as losses); with order both,
the share of comparisons on which the two orders agreed. Turn-type shares from
the heuristic labeller carry its measured coverage and accuracy and the labelled
set they come from. When generated replies were reviewed for pollution
(stages.pollution.on: generated), a table in the shape of Huang et al.'s Table 1:
per strategy and category the polluted share with Wilson intervals and the
annotator's confidence, the dataset's replies beside them, and paired tests
between strategies on the same turns.

Examples:
   ac3 report --db run.db --out runs/report/
   ac3 report --db run.db --out out/ --formats md,json --resamples 5000`,
		Flags: []cli.Flag{
			dbFlag,
			&cli.StringFlag{Name: "out", Required: true, Usage: "folder for the report files"},
			&cli.StringSliceFlag{Name: "formats", Usage: strings.Join(report.Formats, ", ") + " (default all)"},
			&cli.IntFlag{Name: "resamples", Usage: "bootstrap resamples (default 2000)"},
			&cli.Uint64Flag{Name: "seed", Usage: "bootstrap seed (default: the run's judge seed)"},
			&cli.Float64Flag{Name: "level", Usage: "confidence level (default 0.95)"},
		},
		Action: func(c *cli.Context) error {
			rp := run.Report{Out: c.String("out"), Formats: splitList(c.StringSlice("formats")), SeedFromRun: !c.IsSet("seed"),
				Options: report.Options{Resamples: c.Int("resamples"), Level: c.Float64("level"), Seed: c.Uint64("seed")}}
			return execute(c, e, run.Plan{DB: c.String("db"), Report: &rp}, runOptions(e))
		},
	}
}
