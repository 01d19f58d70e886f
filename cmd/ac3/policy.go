package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/curate"
)

func policyCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "policy",
		Usage: "the adaptive strategy's scored policy",
		Subcommands: []*cli.Command{{
			Name:        "fit",
			Usage:       "fit P(fc wins over ao) on this run's judge results, for 'adaptive' with policy scored",
			Description: curate.PolicyFitHelp(),
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
				opts := curate.PolicyFitOptions{Ties: ties, Folds: c.Int("folds"), Seed: c.Uint64("seed"), ByTurn: c.Bool("folds-by-turn")}
				fit, err := run.FitPolicy(c.Context, c.String("db"), c.String("encoding"), opts)
				if errors.Is(err, curate.ErrTooFewJudged) {
					return fmt.Errorf("%w.\n%s", err, curate.PolicyNeeds())
				}
				if err != nil {
					return err
				}
				p := fit.Policy
				f := p.Fit
				fmt.Fprintf(e.stdout, "policy %s fitted on %d judged turns (fc won %d, lost %d, tied %d; ties as %s; mean assistant history %.0f tokens)\n",
					p.Hash(), p.N, f.Wins, f.Losses, f.TiesN, f.Ties, p.MeanAsstTokens)
				fmt.Fprintf(e.stdout, "L1 logistic, %s classes, strength by %d-fold CV on %s (folds by %s): λ = %.4g (C = %.4g), %d of %d coefficients kept\n",
					f.Classes, f.Folds, f.Metric, f.FoldsBy, f.Lambda, f.C, f.NonZero, len(p.Features))
				fmt.Fprintf(e.stdout, "held out: accuracy %.1f%% ± %.1f (majority class %.1f%%), balanced accuracy %.1f%%, F1 %.3f; training accuracy %.1f%%\n",
					100*f.HeldOut.Accuracy, 100*f.HeldOut.SD, 100*f.Majority, 100*f.HeldOut.BalancedAccuracy, f.HeldOut.F1, 100*p.TrainAccuracy)
				fmt.Fprintf(e.stdout, "τ = %.3f: keep fc iff P(fc wins) ≥ τ agrees with the judge on %.1f%% of held-out turns (at λ cost 0)\n", f.Tau, 100*f.TauAccuracy)
				fmt.Fprintf(e.stdout, "  %-16s %+.3f\n", "(bias)", p.Weights[0])
				for i, f := range p.Features {
					fmt.Fprintf(e.stdout, "  %-16s %+.3f\n", f, p.Weights[i+1])
				}
				if !fit.WithTypes {
					fmt.Fprintln(e.stdout, "  (no classify stage in this run: turn-type and reference features were zero)")
				}
				fmt.Fprintf(e.stdout, "use it with: ac3 curate --strategies adaptive --adaptive-policy scored --tau %.3f [--lambda L]\n", f.Tau)
				return nil
			},
		}},
	}
}
