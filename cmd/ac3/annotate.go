package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/classify"
	"github.com/ac3/ac3/stages/constraints"
	"github.com/ac3/ac3/stages/pollution"
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
			plan := run.Plan{DB: c.String("db"), Model: m, Annotate: &a, Replies: replies}
			if c.Bool("dry-run") {
				return dryRun(c, e, plan, nil)
			}
			return execute(c, e, plan, runOptions(e))
		},
	}
}

func annotateFrom(c *cli.Context) (run.Annotate, *run.ReviewReplies, error) {
	var a run.Annotate
	var err error
	if a.Workers, err = workersOf(c); err != nil {
		return a, nil, err
	}
	ann := c.String("annotator")
	if ann != run.Heuristic && ann != run.LLM {
		return a, nil, fmt.Errorf("--annotator %q: want %s or %s", ann, run.Heuristic, run.LLM)
	}
	wantPollution := false
	for _, s := range splitList([]string{c.String("stages")}) {
		switch s {
		case classify.StageName, "refs":
			a.Classify = ann
		case constraints.StageName:
			a.Constraints = ann
		case pollution.StageName:
			wantPollution = true
		default:
			return a, nil, fmt.Errorf("--stages: unknown stage %q (want %s)", s, strings.Join(run.AnnotateStages(), ", "))
		}
	}
	dataset, responses, bad := run.PollutionTargets(splitList([]string{c.String("on")}))
	if bad != "" {
		return a, nil, fmt.Errorf("--on: %q, want dataset or responses", bad)
	}
	if !responses && (c.IsSet("strategies") || c.IsSet("samples")) {
		return a, nil, fmt.Errorf("--strategies and --samples choose generated replies to review: add --on responses")
	}
	if c.Int("samples") < 0 {
		return a, nil, fmt.Errorf("--samples %d: want 0 (all) or more", c.Int("samples"))
	}
	a.Pollution = wantPollution && dataset
	if !wantPollution || !responses {
		return a, nil, nil
	}
	return a, &run.ReviewReplies{Strategies: splitList(c.StringSlice("strategies")), Samples: c.Int("samples"), Dataset: dataset, Workers: c.Int("workers")}, nil
}
