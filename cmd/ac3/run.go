package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/memgov"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/run/config"
)

func runCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "run",
		Usage:       "run the stages a config file lists, resumably",
		Description: config.Help(),
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Required: true, Usage: "the run's config file"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the plan, the work left and its cost; change nothing"},
			&cli.BoolFlag{Name: "json", Usage: "with --dry-run, print the plan as JSON"},
			&cli.IntFlag{Name: "workers", Usage: fmt.Sprintf(workersUsage, "conversations handled") + " (default run.workers, else one per core)"},
			&cli.BoolFlag{Name: "batch", Usage: "send every role's requests through the endpoints' batch API (half price, answers within 24h; see ac3 batch)"},
			acceptFailedFlag,
		}, shardFlags()...),
		Action: func(c *cli.Context) error {
			cfg, err := config.Load(c.String("config"), e.getenv)
			if err != nil {
				return err
			}
			if c.IsSet("workers") {
				if cfg.Run.Workers, err = workersOf(c); err != nil {
					return err
				}
			}
			plan, notes, err := cfg.Plan(e.getenv)
			if err != nil {
				return err
			}
			plan.Model = config.WithBatch(plan.Model, c.Bool("batch"))
			if plan, err = withShard(c, e, plan); err != nil {
				return err
			}
			if c.Bool("dry-run") {
				memoryCeiling(e, memgov.Readers)
				return dryRun(c, e, plan, notes)
			}
			for _, n := range notes {
				fmt.Fprintln(e.stdout, "annotate: "+n)
			}
			if cfg.Run.Out != "" {
				if err := os.MkdirAll(cfg.Run.Out, 0o755); err != nil {
					return fmt.Errorf("creating %s: %w", cfg.Run.Out, err)
				}
			}
			opts := runOptions(e)
			opts.Headings = true
			res, err := executeResult(c, e, plan, opts)
			res.WriteDone(e.stdout, plan.DB, err)
			return run.FilterError(err, config.FilterKeys)
		},
	}
}

// dryRun prints the forecast of plan, as text or (--json) JSON.
func dryRun(c *cli.Context, e *env, plan run.Plan, notes []string) error {
	plan, err := withShard(c, e, plan)
	if err != nil {
		return err
	}
	ctx, cancel := run.UntilStop(c.Context, e.stop)
	defer cancel()
	return run.StoppedOr(ctx, c.Context, run.DryRun(ctx, e.stdout, plan, notes, c.Bool("json")))
}
