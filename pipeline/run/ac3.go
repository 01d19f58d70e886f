package run

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/progress"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate"
)

// PolicyFit is what FitPolicy fitted.
type PolicyFit struct {
	Policy curate.Policy
	// WithTypes: the run has a classify stage, so turn types and
	// references were features (without one they are zero).
	WithTypes bool
}

// FitPolicy fits the adaptive strategy's scored policy on the run's own
// judgments of fc against ao (the quality outcome of each judged turn; ties
// as o.Ties says, losses by default) by L1 logistic regression with its
// strength chosen by cross-validation (curate.FitPolicy), and stores it in
// the run. encoding is the tokenizer curate used. It fails with an error
// wrapping curate.ErrTooFewJudged when the run has fewer than
// curate.MinPolicyExamples judged turns.
func FitPolicy(ctx context.Context, db, encoding string, o curate.PolicyFitOptions) (PolicyFit, error) {
	var fit PolicyFit
	counter, err := tokens.New(encoding)
	if err != nil {
		return fit, err
	}
	l, err := ledger.Open(ctx, db, ledger.Options{})
	if err != nil {
		return fit, err
	}
	defer l.Close()
	plans, err := l.Plans(ctx)
	if err != nil {
		return fit, err
	}
	var judged []curate.JudgedTurn
	for _, v := range plans[judge.StageName] {
		p, _, err := judge.ParseVariant(v.Name)
		if err != nil || !((p.A == "fc" && p.B == "ao") || (p.A == "ao" && p.B == "fc")) {
			continue
		}
		err = l.Units(ctx, judge.StageName, []ledger.Variant{v}, 0, math.MaxInt64, func(u ledger.Unit) error {
			if u.Status != ledger.Done {
				return nil
			}
			if w, ok := judge.ShareWon(u.Output, p, "fc", judge.Quality); ok {
				judged = append(judged, curate.JudgedTurn{Conv: u.ConvID, Turn: u.Turn, FCWins: w})
			}
			return nil
		})
		if err != nil {
			return fit, err
		}
	}
	if len(judged) < curate.MinPolicyExamples {
		return fit, fmt.Errorf("found %d judged fc-vs-ao turns in %s: %w", len(judged), l.Path(), curate.ErrTooFewJudged)
	}
	classify, _ := curate.PickUpstream(plans[curate.ClassifyStage], "")
	fit.WithTypes = classify.Variant != ""
	fit.Policy, err = curate.FitRunPolicy(ctx, l, judged, classify, counter, o)
	return fit, err
}

// Learning is what LearnMemory did.
type Learning struct {
	curate.LearnResult
	Skipped string // why nothing was learned (no endpoint), "" otherwise
}

// LearnMemory learns the offline AC3 cheatsheet on the first n
// conversations of the run (a third of them when n <= 0), analyzing turns
// from `from` on, and stores it in the run (see curate.LearnOffline). With
// again it learns even when the run already has a cheatsheet for the same
// split. Without an endpoint it learns nothing and says why.
func LearnMemory(ctx context.Context, db string, m Model, n, from int, again bool, o Options) (Learning, error) {
	var res Learning
	l, err := ledger.Open(ctx, db, ledger.Options{})
	if err != nil {
		return res, err
	}
	defer l.Close()
	total, err := l.CountConversations(ctx)
	if err != nil {
		return res, err
	}
	if n <= 0 {
		n = int(max(1, total/3))
	}
	client, err := m.client(ctx, l, nil, o.Progress)
	if errors.Is(err, ErrNoEndpoint) {
		res.Skipped = err.Error()
		return res, nil
	}
	if err != nil {
		return res, err
	}
	an, err := analyze.New(client, analyze.Options{})
	if err != nil {
		return res, err
	}
	r := &runner{opts: o}
	meter := progress.Start(r.progress(), "memory", "conversations", min(int64(n), total))
	defer meter.Stop()
	res.LearnResult, err = curate.LearnOffline(ctx, an, l, curate.LearnOptions{
		Conversations: n, From: from, Again: again,
		OnConversation: func(u analyze.Usage) { meter.Add(1, 0); meter.AddCost(u.CostUSD) },
		OnSkip: func(id string, err error) {
			r.logf("memory learn: skipping conversation %s: %v\n", id, err)
		},
	})
	return res, err
}
