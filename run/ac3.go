package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/progress"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/curate/memory"
	"github.com/ac3/ac3/stages/curate/policy"
)

// PolicyFit is what FitPolicy fitted.
type PolicyFit struct {
	Policy policy.Policy
	// WithTypes: the run has a classify stage, so turn types and
	// references were features (without one they are zero).
	WithTypes bool
}

// FitPolicy fits the adaptive strategy's scored policy on the run's own
// judgments of fc against ao (the quality outcome of each judged turn; ties
// as o.Ties says, losses by default) by L1 logistic regression with its
// strength chosen by cross-validation (policy.Fit), and stores it in
// the run. encoding is the tokenizer curate used. It fails with an error
// wrapping policy.ErrTooFewJudged, followed by what the fit needs
// (policy.Needs), when the run has fewer than policy.MinExamples judged
// turns.
//
// With the paper's features (o.Features) the judged turns' prompts and
// histories are embedded by m's embedder role, cut to embedMax tokens
// (policy.DefaultEmbedMaxTokens when 0), online whatever m's mode (a fit
// waits for its answers), through the run's cache and records.
func FitPolicy(ctx context.Context, db, encoding string, m Model, embedMax int, o policy.FitOptions) (PolicyFit, error) {
	var fit PolicyFit
	counter, err := tokens.New(encoding)
	if err != nil {
		return fit, err
	}
	set, err := policy.ParseFeatureSet(o.Features)
	if err != nil {
		return fit, err
	}
	l, err := ledger.Open(ctx, db, ledger.Options{})
	if err != nil {
		return fit, err
	}
	defer l.Close()
	var embed policy.Embedder
	if set == policy.FeaturesPaper {
		embedMax = cmp.Or(embedMax, policy.DefaultEmbedMaxTokens)
		cl, err := m.online().client(ctx, l, counter, nil)
		if err != nil {
			return fit, fmt.Errorf("fitting on the paper's features, which need the %s role: %w", llm.EmbedderRole, err)
		}
		o.EmbedMaxTokens = embedMax
		if embed, o.Embedder = embedderOf(cl, "policy"); embed == nil {
			return fit, fmt.Errorf("fitting on the paper's features: no model is bound to the %s role (roles.%s in --config)", llm.EmbedderRole, llm.EmbedderRole)
		}
	} else {
		embedMax = 0
	}
	plans, err := l.Plans(ctx)
	if err != nil {
		return fit, err
	}
	var judged []policy.JudgedTurn
	for _, v := range plans[judge.StageName] {
		p, _, err := judge.ParseVariant(v.Name)
		if err != nil || !((p.A == "fc" && p.B == "ao") || (p.A == "ao" && p.B == "fc")) {
			continue
		}
		// A fit on what happened to get judged is not the run's fit: failed
		// verdicts are retried first.
		ss, err := l.StageProgress(ctx, judge.StageName, v)
		if err != nil {
			return fit, err
		}
		if ss.UnitsFailed > 0 {
			return fit, fmt.Errorf("judge %s has %d failed units in %s: 'ac3 retry --db %s --stage %s', run the judge again, then fit", v.Name, ss.UnitsFailed, l.Path(), l.Path(), judge.StageName)
		}
		err = l.Units(ctx, judge.StageName, []ledger.Variant{v}, 0, math.MaxInt64, func(u ledger.Unit) error {
			if u.Status != ledger.Done {
				return nil
			}
			if w, ok := judge.ShareWon(u.Output, p, "fc", judge.Quality); ok {
				judged = append(judged, policy.JudgedTurn{Conv: u.ConvID, Turn: u.Turn, FCWins: w})
			}
			return nil
		})
		if err != nil {
			return fit, err
		}
	}
	if len(judged) < policy.MinExamples {
		err = fmt.Errorf("found %d judged fc-vs-ao turns in %s: %w", len(judged), l.Path(), policy.ErrTooFewJudged)
	} else {
		classify, _ := curate.PickUpstream(plans[curate.ClassifyStage], "")
		fit.WithTypes = classify.Variant != ""
		fit.Policy, err = policy.FitRun(ctx, l, judged, curate.PolicyFeatures(l, classify, counter, embedMax), embed, o)
	}
	if errors.Is(err, policy.ErrTooFewJudged) {
		// Either count came short (FitRun's after dropped ties): say what
		// the run needs.
		err = fmt.Errorf("%w.\n%s", err, policy.Needs())
	}
	return fit, err
}

// embedderOf is cl's embedder role as the adaptive policy embeds with it,
// accounted to stage, and the model it names; nil when the role is not
// bound.
func embedderOf(cl *llm.Client, stage string) (policy.Embedder, string) {
	if !cl.HasEmbedder("") {
		return nil, ""
	}
	ep, err := cl.Endpoint(llm.EmbedderRole)
	if err != nil {
		return nil, ""
	}
	return func(ctx context.Context, texts []string) ([][]float32, error) {
		r, err := cl.Embed(ctx, llm.EmbedRequest{Stage: stage, Input: texts})
		return r.Vectors, err
	}, ep.Model
}

// online is m with every endpoint and role answering online.
func (m Model) online() Model {
	if m.Options == nil {
		return m
	}
	opts := *m.Options
	setMode(&opts, llm.ModeOnline)
	m.Options, m.Batch = &opts, nil
	return m
}

// Learning is what LearnMemory did.
type Learning struct {
	memory.LearnResult
	Skipped string // why nothing was learned (no endpoint), "" otherwise
}

// LearnMemory learns the offline AC3 cheatsheet on the first n
// conversations of the run (a third of them when n <= 0), analyzing turns
// from `from` on, and stores it in the run (see memory.LearnOffline): one
// reflection per conversation on its trajectory, with the decisions of the
// gated-reset operator under ac's gate and, as outcomes, the run's judge
// verdicts of ac.OutcomePair (by default the first judged pair with an AC3
// operator on one side), then one consolidation. With again it learns even
// when the run already has a cheatsheet for the same split. Without an
// endpoint it learns nothing and says why.
func LearnMemory(ctx context.Context, db string, m Model, n, from int, again bool, ac AC3, o Options) (Learning, error) {
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
	plans, err := l.Plans(ctx)
	if err != nil {
		return res, err
	}
	pair, err := outcomePair(plans[judge.StageName], ac.OutcomePair)
	if err != nil {
		return res, err
	}
	client, err := m.client(ctx, l, nil, o.Progress)
	if errors.Is(err, ErrNoEndpoint) {
		res.Skipped = err.Error()
		return res, nil
	}
	if err != nil {
		return res, err
	}
	an, err := analyze.New(client, analyze.Options{Prompts: ac.Prompts})
	if err != nil {
		return res, err
	}
	r := &runner{opts: o}
	meter := progress.Start(r.progress(), "memory", "conversations", min(int64(n), total))
	defer meter.Stop()
	gate := curate.DefaultGate(curated.OpGatedReset)
	if g, ok := ac.Gates[curated.OpGatedReset]; ok {
		gate = g
	}
	opts := memory.LearnOptions{
		Conversations: n, From: from, Again: again, Decisions: curate.Decisions(curated.OpGatedReset, gate),
		OnConversation: func(u analyze.Usage) { meter.Add(1, 0); meter.AddCost(u.CostUSD) },
		OnSkip: func(id string, err error) {
			r.logf("memory learn: skipping conversation %s: %v\n", id, err)
		},
	}
	if pair.Name != "" {
		opts.OutcomePair = pair.Name
		opts.Outcomes = func(ctx context.Context, c *conv.Conversation) (memory.Outcomes, error) {
			return judgedOutcomes(ctx, l, pair, c.ID)
		}
	}
	res.LearnResult, err = memory.LearnOffline(ctx, an, l, opts)
	return res, err
}

// outcomePair picks the judge variant whose verdicts are the outcomes
// memory learning shows: the one named (a pair "A:B", or a judge variant
// name), or the first pair with an AC3 operator on one side. None (a run
// not judged yet) gives the zero Variant; a name the run has not judged is
// an error.
func outcomePair(vs []ledger.Variant, want string) (ledger.Variant, error) {
	for _, v := range vs {
		p, _, err := judge.ParseVariant(v.Name)
		if err != nil {
			continue
		}
		if want != "" && (v.Name == want || p.A+":"+p.B == want) {
			return v, nil
		}
		if want == "" && (isOperator(p.A) || isOperator(p.B)) {
			return v, nil
		}
	}
	if want != "" {
		return ledger.Variant{}, fmt.Errorf("memory outcome pair %q: the run has no judgments of it", want)
	}
	return ledger.Variant{}, nil
}

func isOperator(strategy string) bool {
	name, _, _ := strings.Cut(strategy, "+")
	switch name {
	case curated.OpAugment, curated.OpReset, curated.OpGatedReset, curated.OpRewrite:
		return true
	}
	return false
}

// judgedOutcomes reads the quality verdicts of judge variant v on
// conversation convID: one line per judged turn, from the operator's side
// of the pair, and a count of them.
func judgedOutcomes(ctx context.Context, l *ledger.Ledger, v ledger.Variant, convID string) (memory.Outcomes, error) {
	out := memory.Outcomes{ByTurn: map[int]string{}}
	p, _, err := judge.ParseVariant(v.Name)
	if err != nil {
		return out, err
	}
	side, other := p.A, p.B
	if !isOperator(side) && isOperator(other) {
		side, other = other, side
	}
	us, err := l.ConversationUnits(ctx, judge.StageName, convID, 0)
	if err != nil {
		return out, err
	}
	var won, lost, tied int
	for _, u := range us {
		if u.Variant != v.Name || u.Version != v.Version || u.Status != ledger.Done {
			continue
		}
		share, ok := judge.ShareWon(u.Output, p, side, judge.Quality)
		if !ok {
			continue
		}
		verdict := "tie"
		switch {
		case share > 0.5:
			verdict, won = "won", won+1
		case share < 0.5:
			verdict, lost = "lost", lost+1
		default:
			tied++
		}
		out.ByTurn[u.Turn] = fmt.Sprintf("judge on quality: %s's reply %s against %s's", side, verdict, other)
	}
	if n := won + lost + tied; n > 0 {
		out.Summary = fmt.Sprintf("%s against %s, judged on quality at %d turns: won %d, lost %d, tied %d", side, other, n, won, lost, tied)
	}
	return out, nil
}
