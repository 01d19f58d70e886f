package run

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/compint"
	"github.com/ac3/ac3/stages/compint/measure"
	"github.com/ac3/ac3/stages/curate"
)

// CompInt is the CompInt experiment (Wang et al., "Lost in Compaction"):
// long contexts stitched from the ingested conversations, a session
// constraint injected, each strategy's context of the probe turn scored
// for retention and compliance. The instances are conversations of the
// run (origin measure.Origin), built right after ingest; curate them with
// `on: [compint]` and `last_turns: 1` so strategies run on the probe turn.
type CompInt struct {
	// SCs is a JSON file of SCs and probes in the shipped set's shape; ""
	// uses the shipped 15.
	SCs string
	// TargetTokens is the length each stitched context must reach (the
	// paper: 100,000); MaxContexts caps how many are made (the paper: 50;
	// 0: as many as the input gives).
	TargetTokens int
	MaxContexts  int
	// Locations and Framings are crossed for each context and SC (default:
	// top and explicit, the paper's main setting); Repeat is how many
	// turns the multi location restates the SC in.
	Locations []string
	Framings  []string
	Repeat    int
	// Strategies are the curated strategies scored (default: every one
	// curated in the run).
	Strategies []string
	// Orders is how the two options of a probe are laid out: random (one
	// order drawn from the run seed per context and SC, the default) or
	// both.
	Orders string
	// JudgeRole decides retention, ProbeRole answers the probes.
	JudgeRole, ProbeRole string
	// MinDenominator is the |c_ub − c_lctx| below which effect retention is
	// left undefined (compint.DefaultMinDenominator when 0).
	MinDenominator float64
	Encoding       string // tokenizer (tokens.DefaultEncoding when "")
	// Stitch is how contexts are stitched: topic (nearest neighbours over
	// the embedder role's embeddings, the paper's App. A.1) or sequential
	// (input order); "" is topic with an embedder bound, else sequential.
	// EmbedMaxTokens cuts the text embedded per conversation
	// (compint.DefaultEmbedMaxTokens when 0).
	Stitch         string
	EmbedMaxTokens int
	// EmbedPool caps how many source conversations (the first, in input
	// order) topic stitching embeds and draws from; DefaultEmbedPool when
	// 0. Their vectors are held in memory (4 bytes × dimensions each).
	EmbedPool int
	// UpperBound is the context the upper-bound group starts from: clean
	// (the paper's C(H) ⊕ s, the default) or injected (C(H_s) ⊕ s).
	UpperBound string
	// Prompts replace the probe's and the retention judge's prompts with
	// users' templates; nil fields keep ours.
	Prompts compint.Prompts
}

// set loads the SC set.
func (c *CompInt) set() (*compint.Set, error) {
	if c.SCs == "" {
		return compint.Default(), nil
	}
	return compint.Load(c.SCs)
}

// builders returns a fresh stitcher and the instance builder.
func (c *CompInt) builders(seed uint64) (*compint.Stitcher, *compint.Builder, error) {
	counter, err := tokens.New(cmp.Or(c.Encoding, tokens.DefaultEncoding))
	if err != nil {
		return nil, nil, err
	}
	set, err := c.set()
	if err != nil {
		return nil, nil, err
	}
	st, err := compint.NewStitcher(counter, compint.StitchOptions{TargetTokens: cmp.Or(c.TargetTokens, compint.PaperTargetTokens), MaxContexts: c.MaxContexts})
	if err != nil {
		return nil, nil, fmt.Errorf("compint: %w", err)
	}
	opt := compint.Options{Repeat: c.Repeat, Seed: seed}
	for _, l := range c.Locations {
		opt.Locations = append(opt.Locations, compint.Location(l))
	}
	for _, f := range c.Framings {
		opt.Framings = append(opt.Framings, compint.Framing(f))
	}
	bd, err := compint.NewBuilder(counter, set, opt)
	if err != nil {
		return nil, nil, fmt.Errorf("compint: %w", err)
	}
	return st, bd, nil
}

// check refuses settings that cannot work, before the run file is touched.
func (c *CompInt) check() error {
	if _, _, err := c.builders(0); err != nil {
		return err
	}
	if _, err := compint.Orders(compint.OrderMode(c.Orders), 0, "", 0); err != nil {
		return fmt.Errorf("compint: %w", err)
	}
	if err := compint.CheckStitchMethod(compint.StitchMethod(c.Stitch)); err != nil {
		return fmt.Errorf("compint: %w", err)
	}
	switch compint.UpperBoundBase(c.UpperBound) {
	case "", compint.UBClean, compint.UBInjected:
	default:
		return fmt.Errorf("compint: upper_bound %q: want %s (the paper's C(H) ⊕ s) or %s (C(H_s) ⊕ s)", c.UpperBound, compint.UBClean, compint.UBInjected)
	}
	return nil
}

// compintBuild derives the CompInt instances from the ingested
// conversations. It runs right after ingest: nothing may add conversations
// while a derivation is unfinished, and the strategies must see the
// instances. A run whose instances are all stored re-walks nothing.
func (r *runner) compintBuild(ctx context.Context) (bool, error) {
	c := r.plan.CompInt
	if c == nil {
		return true, nil
	}
	r.heading("compint: build instances")
	st, bd, err := c.builders(uint64(r.plan.Seed))
	if err != nil {
		return false, err
	}
	method, err := c.stitchMethod(r.plan.Model)
	if err != nil {
		return false, err
	}
	// The instances are fixed once built: settings that would build others
	// need a new run file, or the run would mix two experiments.
	key := c.buildKey(st, bd)
	if method == compint.StitchTopic {
		key += c.topicKey(r.plan.Model)
	}
	if _, err := r.keptKey(ctx, metaCompIntBuild, key, func(had string) error {
		return fmt.Errorf("compint: this run's instances were built with other settings (%s); now %s: use a new run file to build others", had, key)
	}); err != nil {
		return false, err
	}
	done, err := r.derived(ctx, measure.Origin)
	if err != nil {
		return false, err
	}
	if done {
		r.logf("compint: instances already built\n")
		return true, nil
	}
	if err := r.l.SetMeta(ctx, metaCompIntBuild, key); err != nil {
		return false, err
	}
	var sum pipeline.DeriveSummary
	if method == compint.StitchTopic {
		sum, err = r.topicBuild(ctx, c, st, bd)
	} else {
		r.logf("compint: sequential stitching, conversations in input order (stitch: topic needs the %s role)\n", llm.EmbedderRole)
		sum, err = pipeline.Derive(ctx, r.l, measure.Origin, ledger.MustOrigins(ledger.OriginSource), measure.Instances(st, bd), pipeline.DeriveOptions{Stop: r.opts.Stop})
	}
	if err != nil {
		return false, err
	}
	s := st.Stats()
	r.logf("compint: %d instances (%d new) from %d stitched contexts of %d conversations (%d per context: per SC, a no-SC baseline and each location × framing)\n",
		sum.Added+sum.Existing, sum.Added, s.Contexts, s.Conversations, bd.PerContext())
	if s.Contexts == 0 {
		r.logf("compint: no context reached %d tokens; lower compint.target_tokens or ingest more conversations\n", st.Options().TargetTokens)
	}
	return !sum.Stopped, nil
}

// metaCompIntBuild is the settings key recording what built the instances.
const metaCompIntBuild = "compint.build"

// buildKey names everything that decides which instances are built.
func (c *CompInt) buildKey(st *compint.Stitcher, bd *compint.Builder) string {
	so, bo := st.Options(), bd.Options()
	return fmt.Sprintf("target=%d max_contexts=%d locations=%v framings=%v repeat=%d seed=%d scs=%s encoding=%s",
		so.TargetTokens, so.MaxContexts, bo.Locations, bo.Framings, bo.Repeat, bo.Seed, bd.Set().Hash(), cmp.Or(c.Encoding, tokens.DefaultEncoding))
}

// derived reports whether the derivation of origin has finished.
func (r *runner) derived(ctx context.Context, origin string) (bool, error) {
	ds, err := r.l.DerivedOrigins(ctx)
	if err != nil {
		return false, err
	}
	for _, d := range ds {
		if d.Origin == origin {
			return d.Finished, nil
		}
	}
	return false, nil
}

// build builds the measurement stage over the curate stage's plan; it
// returns the strategies it scores.
func (c *CompInt) build(client *llm.Client, units measure.UnitReader, plans map[string][]ledger.Variant, m Model, seed int64) (*measure.Stage, []string, error) {
	cv, curated := planVersions(plans, curate.StageName)
	strategies := c.Strategies
	if len(strategies) == 0 {
		strategies = curated
	}
	set, err := c.set()
	if err != nil {
		return nil, nil, err
	}
	judgeRole := cmp.Or(c.JudgeRole, measure.DefaultJudgeRole)
	probeRole := cmp.Or(c.ProbeRole, measure.DefaultProbeRole)
	st, err := measure.New(client, units, measure.Options{
		Strategies: strategies, CurateVersions: cv, Set: set,
		Orders: compint.OrderMode(c.Orders), Seed: uint64(seed),
		JudgeRole: judgeRole, ProbeRole: probeRole,
		JudgeSettings: m.roleSettings(judgeRole), ProbeSettings: m.roleSettings(probeRole),
		Prompts: c.Prompts, UpperBound: compint.UpperBoundBase(c.UpperBound),
	})
	return st, strategies, err
}

// compintMeasure scores every instance: retention and compliance per
// strategy.
func (r *runner) compintMeasure(ctx context.Context) (bool, error) {
	c := r.plan.CompInt
	if c == nil {
		return true, nil
	}
	r.heading("compint: retention and compliance")
	client, plans, err := r.modelClient(ctx, measure.StageName)
	if err != nil || client == nil {
		return err == nil, err
	}
	st, strategies, err := c.build(client, r.l, plans, r.plan.Model, r.plan.Seed)
	if err != nil {
		return false, err
	}
	label := fmt.Sprintf("compint (%s)", strings.Join(append([]string{measure.LongVariant}, strategies...), ","))
	res, err := r.runStage(ctx, stageRun{label: label, stage: st})
	if err != nil {
		return false, err
	}
	return r.addStage(res), nil
}
