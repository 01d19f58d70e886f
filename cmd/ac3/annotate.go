package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/run"
)

func annotateCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "annotate",
		Usage:       "label user turns, find session constraints, review replies for pollution",
		Description: run.AnnotateHelp(),
		Flags: append([]cli.Flag{
			dbFlag(),
			&cli.StringFlag{Name: "stages", Value: "classify,constraints", Usage: "comma-separated: " + strings.Join(run.AnnotateStages(), ", ") + " (refs come with classify)"},
			&cli.StringFlag{Name: "annotator", Value: run.Heuristic, Usage: run.Heuristic + " | " + run.LLM + ", for classify and constraints"},
			&cli.StringFlag{Name: "on", Value: "dataset", Usage: "pollution: dataset | responses | dataset,responses"},
			&cli.StringSliceFlag{Name: "strategies", Usage: "pollution --on responses: respond variants to review (default: all)"},
			&cli.IntFlag{Name: "samples", Usage: "pollution --on responses: samples per reply to review (default: all)"},
			workersFlag(4, "conversations annotated"),
			&cli.BoolFlag{Name: "dry-run", Usage: "print the planned model calls and an estimated cost, change nothing"},
			acceptFailedFlag,
		}, append(llmFlags(), shardFlags()...)...),
		Action: func(c *cli.Context) error {
			a, replies, err := annotateFrom(c)
			if err != nil {
				return err
			}
			_, m, err := modelFlags(c, e)
			if err != nil {
				return err
			}
			return stageCommand(c, e, run.Plan{DB: c.String("db"), Model: m, Annotate: &a, Replies: replies})
		},
	}
}

func annotateFrom(c *cli.Context) (run.Annotate, *run.ReviewReplies, error) {
	workers, err := workersOf(c)
	if err != nil {
		return run.Annotate{}, nil, err
	}
	return run.AnnotateFlags{
		Stages: splitList([]string{c.String("stages")}), Annotator: c.String("annotator"), On: splitList([]string{c.String("on")}),
		Strategies: splitList(c.StringSlice("strategies")), Samples: c.Int("samples"), Choose: c.IsSet("strategies") || c.IsSet("samples"),
		Workers: workers,
	}.Plan()
}
