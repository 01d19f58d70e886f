package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/run"
)

func judgeCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "judge",
		Usage:       "compare the answers of two strategies pairwise with an LLM judge",
		Description: judge.Help(),
		Flags: append(append(llmFlags(), shardFlags()...), dbFlag(),
			&cli.StringSliceFlag{Name: "pairs", Usage: "A:B pairs of respond variants (default: stages.judge.pairs)"},
			&cli.StringFlag{Name: "order", Usage: strings.Join(judge.Orders(), " | ") + " (default " + judge.OrderRandom + ", as in the papers; both is stricter)"},
			&cli.StringFlag{Name: "context", Usage: strings.Join(judge.Contexts(), " | ") + " (default " + judge.ContextFull + ")"},
			&cli.StringFlag{Name: "role", Usage: "the judging role (default " + judge.DefaultRole + ")"},
			&cli.Int64Flag{Name: "seed", Usage: "seed for random order (default: run.seed)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the plan and the estimated cost, call nothing"},
			acceptFailedFlag,
		),
		Action: func(c *cli.Context) error {
			cfg, m, err := modelFlags(c, e)
			if err != nil {
				return err
			}
			a := run.Judge{Pairs: splitList(c.StringSlice("pairs")), Order: c.String("order"), Context: c.String("context"),
				Role: c.String("role")}
			if a, err = cfg.WithJudge(a); err != nil {
				return err
			}
			seed := c.Int64("seed")
			if cfg != nil && !c.IsSet("seed") {
				seed = cfg.Run.Seed
			}
			return stageCommand(c, e, run.Plan{DB: c.String("db"), Seed: seed, Model: m, Judge: &a})
		},
	}
}

// stageCommand runs a one-stage plan, or with --dry-run forecasts it.
func stageCommand(c *cli.Context, e *env, plan run.Plan) error {
	if c.Bool("dry-run") {
		return dryRun(c, e, plan, nil)
	}
	return execute(c, e, plan, runOptions(e))
}
