package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/memgov"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/run/report"
)

func reportCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "report",
		Usage:       "write report.html, report.md and report.json for a run",
		Description: report.Help(),
		Flags: []cli.Flag{
			dbFlag(),
			&cli.StringFlag{Name: "out", Required: true, Usage: "folder for the report files"},
			&cli.StringSliceFlag{Name: "formats", Usage: strings.Join(report.Formats, ", ") + " (default all)"},
			&cli.IntFlag{Name: "resamples", Usage: "bootstrap resamples (default 2000)"},
			&cli.Uint64Flag{Name: "seed", Usage: "bootstrap seed (default: the run's judge seed)"},
			&cli.Float64Flag{Name: "level", Usage: "confidence level (default 0.95)"},
		},
		Action: func(c *cli.Context) error {
			memoryCeiling(e, memgov.Readers)
			rp := run.Report{Out: c.String("out"), Formats: splitList(c.StringSlice("formats")), SeedFromRun: !c.IsSet("seed"),
				Options: report.Options{Resamples: c.Int("resamples"), Level: c.Float64("level"), Seed: c.Uint64("seed")}}
			res, err := executeResult(c, e, run.Plan{DB: c.String("db"), Report: &rp}, runOptions(e))
			if f := res.ReportFile(); err == nil && f != "" {
				fmt.Fprintf(e.stdout, "the report is %s\n", f)
			}
			return err
		},
	}
}
