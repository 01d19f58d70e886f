package main

import (
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/classify"
)

func evalHeuristicsCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "eval-heuristics",
		Usage:       "measure the rule-based annotators on the labelled turns in fixtures/labelled",
		Description: classify.EvalHeuristicsHelp(),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Value: filepath.Join("fixtures", "labelled"), Usage: "folder holding classify.jsonl and constraints.jsonl"},
			&cli.BoolFlag{Name: "misses", Usage: "also list the ids of wrongly labelled examples"},
		},
		Action: func(c *cli.Context) error {
			return run.EvalHeuristics(e.stdout, c.String("dir"), c.Bool("misses"))
		},
	}
}
