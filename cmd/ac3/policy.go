package main

import (
	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/curate/policy"
)

func policyCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "policy",
		Usage: "the adaptive strategy's scored policy",
		Subcommands: []*cli.Command{{
			Name:        "fit",
			Usage:       "fit P(fc wins over ao) on this run's judge results, for 'adaptive' with policy scored",
			Description: policy.FitHelp(),
			Flags: []cli.Flag{dbFlag(),
				&cli.StringFlag{Name: "encoding", Value: tokens.DefaultEncoding, Usage: "tokenizer for the token features (use the one curate used)"},
				&cli.StringFlag{Name: "ties", Value: "losses", Usage: "a tied turn is: losses (Huang et al.) | half (two half-weight rows) | dropped"},
				&cli.IntFlag{Name: "folds", Value: stats.DefaultL1Folds, Usage: "cross-validation folds that choose the L1 strength"},
				&cli.BoolFlag{Name: "folds-by-turn", Usage: "assign turns to folds one by one (as the paper) instead of whole conversations"},
				&cli.Uint64Flag{Name: "seed", Usage: "fold assignment seed"},
			},
			Action: func(c *cli.Context) error {
				ties, err := stats.ParseTiePolicy(c.String("ties"))
				if err != nil {
					return err
				}
				opts := policy.FitOptions{Ties: ties, Folds: c.Int("folds"), Seed: c.Uint64("seed"), ByTurn: c.Bool("folds-by-turn")}
				fit, err := run.FitPolicy(c.Context, c.String("db"), c.String("encoding"), opts)
				if err != nil {
					return err
				}
				fit.WriteText(e.stdout)
				return nil
			},
		}},
	}
}
