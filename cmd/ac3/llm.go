package main

import (
	"fmt"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/run/config"
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
	budget := c.Float64("budget-usd")
	if budget == 0 && cfg != nil {
		budget = cfg.Run.BudgetUSD
	}
	m := config.WithBatch(config.Model(cfg, e.getenv, c.Bool("no-cache"), budget), c.Bool("batch"))
	if c.IsSet("unreachable") {
		d := c.Duration("unreachable")
		if d <= 0 {
			return nil, run.Model{}, fmt.Errorf("--unreachable %s: want a positive duration (e.g. 60s, 5m)", d)
		}
		if m.Options != nil {
			// A copy: the endpoints may be shared with the config.
			opts := *m.Options
			opts.Endpoints = slices.Clone(opts.Endpoints)
			for i := range opts.Endpoints {
				opts.Endpoints[i].Limits.Unreachable = d
			}
			m.Options = &opts
		}
	}
	return cfg, m, nil
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
				client, err := m.Client()
				if err != nil {
					return err
				}
				// Said before the request, as a run says it: the ping
				// would otherwise be refused as a fatal call (exit 3).
				if ep, err := client.Endpoint(c.String("role")); err == nil {
					if err := ep.CheckKey(); err != nil {
						return err
					}
				}
				res, err := client.Ping(c.Context, c.String("role"))
				if err != nil {
					return fmt.Errorf("pinging role %s: %w", c.String("role"), err)
				}
				res.WriteText(e.stdout, c.String("role"))
				if ep, err := client.Endpoint(c.String("role")); err == nil {
					kind := ep.Kind
					if kind == "" {
						kind = "none given"
					}
					fmt.Fprintf(e.stdout, "output:   %s (endpoint kind: %s)\n", ep.Output, kind)
					fmt.Fprintf(e.stdout, "key:      %s\n", keyLine(ep))
				}
				return nil
			},
		}},
	}
}

// keyLine says where the key sent to an endpoint comes from, never the key.
func keyLine(ep llm.Endpoint) string {
	switch {
	case ep.APIKeyEnv != "":
		return "from " + ep.APIKeyEnv
	case ep.APIKey != "":
		return "set"
	}
	return "none sent (the endpoint names no key variable)"
}
