package main

import (
	"cmp"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/run/config"
	"github.com/ac3/ac3/stages/compint/agreement"
)

// llmFlags are shared by every command that may call a model.
func llmFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "config file with endpoints, models and roles (default: OPENAI_BASE_URL / OPENAI_API_KEY / OPENAI_MODEL for every role)"},
		&cli.BoolFlag{Name: "no-cache", Usage: "neither read nor write the run's answer cache (every call is paid again)"},
		&cli.Float64Flag{Name: "budget-usd", Usage: "stop taking new work before spend (so far plus in flight) would pass this many dollars"},
		&cli.BoolFlag{Name: "batch", Usage: "send every role's requests through the endpoints' batch API (half price, answers within 24h; see ac3 batch)"},
		&cli.DurationFlag{Name: "unreachable", Usage: "stop (exit 3, the work left pending) once an endpoint has been unreachable this long: its host does not resolve, connections are refused or TLS fails (default: each endpoint's limits.unreachable, else 60s)"},
	}
}

// modelFlags reads llmFlags: the config file (nil when none) and the models
// it (or the environment) configures.
func modelFlags(c *cli.Context, e *env) (*config.File, run.Model, error) {
	var cfg *config.File
	if p := c.String("config"); p != "" {
		var err error
		if cfg, err = config.Load(p, e.getenv); err != nil {
			return nil, run.Model{}, err
		}
	}
	o := config.ModelOverlay{NoCache: c.Bool("no-cache"), BudgetUSD: c.Float64("budget-usd"), Batch: c.Bool("batch")}
	if c.IsSet("unreachable") {
		if o.Unreachable = c.Duration("unreachable"); o.Unreachable <= 0 {
			return nil, run.Model{}, fmt.Errorf("--unreachable %s: want a positive duration (e.g. 60s, 5m)", o.Unreachable)
		}
	}
	return cfg, config.WithModel(cfg, e.getenv, o), nil
}

func llmCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "llm",
		Usage: "check model endpoints",
		Subcommands: []*cli.Command{{
			Name:        "ping",
			Usage:       "send one tiny request for a role and show latency, model, usage and rate-limit headers",
			Description: llm.PingHelp(),
			Flags:       append(llmFlags(), &cli.StringFlag{Name: "role", Value: "judge", Usage: "annotator | analyzer | respondent | judge"}),
			Action: func(c *cli.Context) error {
				_, m, err := modelFlags(c, e)
				if err != nil {
					return err
				}
				return run.Ping(c.Context, e.stdout, m, c.String("role"))
			},
		}, {
			Name:        "agreement",
			Usage:       "measure the CompInt retention judge against people's YES/NO labels (accuracy, Cohen's kappa, confusion, by SC type)",
			Description: agreement.Help(),
			ArgsUsage:   "LABELS.jsonl",
			Flags: append(llmFlags(), &cli.StringFlag{Name: "key", Usage: "a blind test's held-aside key (id, judge_retention, sssc_id, compactor per line)"},
				&cli.StringFlag{Name: "db", Usage: "run file whose answer cache the judge uses (a second measurement pays nothing)"},
				&cli.StringFlag{Name: "role", Usage: "role that judges (default: the config's compint judge_role, else judge)"},
				&cli.BoolFlag{Name: "json", Usage: "print the report as JSON"}, &cli.StringFlag{Name: "rows", Usage: "also write each row's verdicts to this JSONL file"}),
			Action: func(c *cli.Context) error {
				cfg, m, err := modelFlags(c, e)
				if err != nil || c.NArg() != 1 {
					return cmp.Or(err, fmt.Errorf("llm agreement: give one label file"))
				}
				a := run.Agreement{Labels: c.Args().First(), Key: c.String("key"), DB: c.String("db"), Role: c.String("role"), JSON: c.Bool("json"), Rows: c.String("rows")}
				if a.CompInt, err = cfg.CompInt(); err != nil {
					return err
				}
				return run.JudgeAgreement(c.Context, e.stdout, e.stderr, m, a)
			},
		}},
	}
}
