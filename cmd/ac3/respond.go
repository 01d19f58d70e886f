package main

import (
	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/respond"
)

func respondCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "respond",
		Usage:       "generate the next assistant turn from each curated context",
		Description: respond.Help(),
		Flags: append(append(llmFlags(), shardFlags()...), dbFlag(),
			&cli.StringSliceFlag{Name: "strategies", Usage: "curated strategies to answer (default: stages.respond, else every curated strategy)"},
			&cli.StringSliceFlag{Name: "respondents", Usage: "roles that answer (default: respondent)"},
			&cli.IntFlag{Name: "samples", Usage: "answers per context (default: the role's samples, else 1)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the plan and the estimated cost, call nothing"},
			acceptFailedFlag,
		),
		Action: func(c *cli.Context) error {
			cfg, m, err := modelFlags(c, e)
			if err != nil {
				return err
			}
			a := run.Respond{Strategies: splitList(c.StringSlice("strategies")), Respondents: splitList(c.StringSlice("respondents")),
				Samples: c.Int("samples")}
			if a, err = cfg.WithRespond(a); err != nil {
				return err
			}
			return stageCommand(c, e, run.Plan{DB: c.String("db"), Model: m, Respond: &a})
		},
	}
}
