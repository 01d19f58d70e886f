package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/run"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/curate"
)

const policyNeeds = `ac3 policy fit needs this run's own pairwise judgments of fc against ao:
  1. curate fc and ao:          ac3 curate --db RUN --strategies fc,ao
  2. generate and judge them:   the judge stage with the pair fc:ao (or ao:fc)
     (stages.judge.pairs in the config); the quality outcome of each judged
     turn is the label (a tie counts half to each side)
  3. optionally classify turns (turn type and references become features)
It then fits P(fc wins) by logistic regression on: round, log tokens of the fc
and ao contexts and of the assistant history, the assistant share of the
context, the turn type, and whether the turn refers back (to an assistant turn
in particular). At least %d judged turns are needed.`

func policyCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "policy",
		Usage: "the adaptive strategy's scored policy",
		Subcommands: []*cli.Command{{
			Name:  "fit",
			Usage: "fit P(fc wins over ao) on this run's judge results, for 'adaptive' with policy scored",
			Description: fmt.Sprintf(policyNeeds, curate.MinPolicyExamples) + `

The fitted policy is stored in the run; 'ac3 curate --strategies adaptive
--adaptive-policy scored --lambda L --tau T' then keeps fc on a turn iff
P(fc wins) − L·Δ ≥ T, Δ being the turn's assistant-history tokens over their
mean in the fitted data. Refitting changes the policy's hash, so adaptive
curates again.

Example:
   ac3 policy fit --db run.db`,
			Flags: []cli.Flag{dbFlag, &cli.StringFlag{Name: "encoding", Value: tokens.DefaultEncoding, Usage: "tokenizer for the token features (use the one curate used)"}},
			Action: func(c *cli.Context) error {
				fit, err := run.FitPolicy(c.Context, c.String("db"), c.String("encoding"))
				if errors.Is(err, curate.ErrTooFewJudged) {
					return fmt.Errorf("%w.\n%s", err, fmt.Sprintf(policyNeeds, curate.MinPolicyExamples))
				}
				if err != nil {
					return err
				}
				p := fit.Policy
				fmt.Fprintf(e.stdout, "policy %s fitted on %d judged turns (fc won %.1f%%; training accuracy %.1f%%; mean assistant history %.0f tokens)\n",
					p.Hash(), p.N, 100*p.FCWinRate, 100*p.TrainAccuracy, p.MeanAsstTokens)
				fmt.Fprintf(e.stdout, "  %-16s %+.3f\n", "(bias)", p.Weights[0])
				for i, f := range p.Features {
					fmt.Fprintf(e.stdout, "  %-16s %+.3f\n", f, p.Weights[i+1])
				}
				if !fit.WithTypes {
					fmt.Fprintln(e.stdout, "  (no classify stage in this run: turn-type and reference features were zero)")
				}
				fmt.Fprintln(e.stdout, "use it with: ac3 curate --strategies adaptive --adaptive-policy scored [--lambda L --tau T]")
				return nil
			},
		}},
	}
}
