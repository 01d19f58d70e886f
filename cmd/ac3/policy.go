package main

import (
	"cmp"

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
			Flags: append([]cli.Flag{dbFlag(),
				&cli.StringFlag{Name: "encoding", Value: tokens.DefaultEncoding, Usage: "tokenizer for the token features (use the one curate used)"}, &cli.StringFlag{Name: "ties", Value: "losses", Usage: "a tied turn is: losses (Huang et al.) | half (two half-weight rows) | dropped"},
				&cli.IntFlag{Name: "folds", Value: stats.DefaultL1Folds, Usage: "cross-validation folds that choose the L1 strength"},
				&cli.BoolFlag{Name: "folds-by-turn", Usage: "assign turns to folds one by one (as the paper) instead of whole conversations"}, &cli.Uint64Flag{Name: "seed", Usage: "fold assignment and principal components seed"},
				&cli.StringFlag{Name: "features", Value: policy.FeaturesAC3, Usage: "ac3 (token sizes, turn type, references; no model) | paper (Huang et al. A.15: rounds, character lengths, prompt type, and the prompt's and history's embeddings by the embedder role, 20 principal components each)"}, &cli.IntFlag{Name: "embed-max-tokens", Value: policy.DefaultEmbedMaxTokens, Usage: "with --features paper, cut each embedded text to this many tokens (OpenAI's embedding models take 8,191; many local ones 512)"},
			}, llmFlags()...),
			Action: func(c *cli.Context) error {
				_, m, err := modelFlags(c, e)
				ties, terr := stats.ParseTiePolicy(c.String("ties"))
				if err = cmp.Or(err, terr); err != nil {
					return err
				}
				opts := policy.FitOptions{Ties: ties, Folds: c.Int("folds"), Seed: c.Uint64("seed"), ByTurn: c.Bool("folds-by-turn"), Features: c.String("features")}
				fit, err := run.FitPolicy(c.Context, c.String("db"), c.String("encoding"), m, c.Int("embed-max-tokens"), opts)
				if err == nil {
					fit.WriteText(e.stdout)
				}
				return err
			},
		}},
	}
}
