package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/memgov"
	"github.com/ac3/ac3/pipeline/record"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/run/convert"
)

func convertCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "convert",
		Usage:       "stream files through the filters into canonical Parquet, Arrow or JSONL, without a run",
		ArgsUsage:   "FILE...",
		Description: convert.Help(),
		Flags: append(filterFlags(),
			&cli.StringFlag{Name: "out", Required: true, Usage: "output file, its format by extension: " + strings.Join(convert.Outputs(), ", ")},
			&cli.BoolFlag{Name: "show-bad", Usage: "print each bad record's file, line and reason"},
		),
		Action: func(c *cli.Context) error {
			memoryCeiling(e, memgov.Convert)
			filter, files, err := filterFrom(c)
			if err != nil {
				return err
			}
			cv := run.Conversion{Files: files, Format: c.String("format"), MaxLineBytes: c.Int("max-line-bytes"), Filter: filter, Out: c.String("out")}
			if c.Bool("show-bad") {
				cv.OnBad = func(b record.Bad) { fmt.Fprintf(e.stderr, "%s: %s: %s\n", b.Source, b.Reason, b.Detail) }
			}
			st, err := run.Convert(c.Context, cv, e.stderr)
			if err != nil {
				return run.FilterError(err, filterFlagNames)
			}
			run.WriteConversion(e.stdout, cv.Out, st)
			return nil
		},
	}
}
