package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/memory"
	"github.com/ac3/ac3/stages/curate/policy"
)

// check refuses settings that cannot work.
func (s AC3) check() error {
	switch s.Memory {
	case "", MemoryOff, MemoryOffline, MemoryOnline:
	default:
		return fmt.Errorf("memory regime %q: valid: %s", s.Memory, strings.Join(MemoryRegimes(), ", "))
	}
	if _, err := analyze.ParseAblation(string(s.Ablation)); err != nil {
		return err
	}
	if err := s.AO.Validate(); err != nil {
		return err
	}
	if _, err := curate.ParseResetTemplate(string(s.ResetTemplate)); err != nil {
		return err
	}
	if _, err := analyze.ParseRewriteVariant(string(s.Rewrite)); err != nil {
		return err
	}
	_, err := curate.ParseReplay(string(s.Replay))
	return err
}

// curateBuild is what building the curate stage gave.
type curateBuild struct {
	stage  pipeline.Stage // nil when no strategy is left to run
	model  bool           // some strategy calls the analyzer
	online *memory.Online
	split  memory.Split // the offline memory's learning split (zero without one)
}

// curateEnv is what building the curate stage reads: the run (nil in a dry
// run of a run that does not exist yet), the stages' plans (those of the
// run, plus in a dry run those the steps before curate will record), and
// where to say what is skipped.
type curateEnv struct {
	l     *ledger.Ledger
	units curate.UnitSource // other stages' units: l, or none in a dry run without a run
	plans map[string][]ledger.Variant
	log   io.Writer
	// client is the model client; nil with noModel set when no endpoint is
	// configured (a dry run builds one without the run's cache).
	client  *llm.Client
	noModel error
	// noCache keeps plug-in compactors' answers out of the run's cache too
	// (--no-cache, model.no_cache).
	noCache bool
}

func (e curateEnv) logf(format string, args ...any) {
	if e.log != nil {
		fmt.Fprintf(e.log, format, args...)
	}
}

// counter is the tokenizer of c.
func (c *Curate) counter() (*tokens.Counter, error) {
	enc := c.Encoding
	if enc == "" {
		enc = tokens.DefaultEncoding
	}
	return tokens.New(enc)
}

// build builds the curate stage. Strategies whose inputs are missing (no
// endpoint, no constraints or classify stage in the run) are dropped with
// one line each.
func (c *Curate) build(ctx context.Context, e curateEnv) (curateBuild, error) {
	var b curateBuild
	specs, err := curate.ParseList(strings.Join(c.Strategies, ","))
	if err != nil {
		return b, err
	}
	counter, err := c.counter()
	if err != nil {
		return b, err
	}
	opts := c.AC3.strategyOptions()
	if e.l != nil && !e.noCache {
		opts.Compact.Cache = e.l.LLMCache() // plug-in answers, kept like model answers
	}
	skip := map[string]string{}
	var modelSpecs []string
	for _, sp := range specs {
		if curate.NeedsModel(sp.Name) {
			modelSpecs = append(modelSpecs, sp.String())
		}
	}
	if len(modelSpecs) > 0 {
		if e.client == nil && e.noModel != nil {
			e.logf("curate: skipping %s: %v\n", strings.Join(modelSpecs, ", "), e.noModel)
			for _, n := range modelSpecs {
				skip[n] = "no endpoint"
			}
		}
		an, err := analyze.New(e.client, analyze.Options{Ablation: c.AC3.Ablation, Retries: c.AC3.Retries, Prompts: c.AC3.Prompts})
		if err != nil {
			return b, err
		}
		opts.Analyzer = an
		if c.AC3.Ablation != analyze.NoAblation {
			e.logf("curate: %s — the analyzer is deliberately weakened for research; results are labelled as such\n", c.AC3.Ablation.Label())
		}
	}
	opts.Units = e.units
	if err := c.runInputs(ctx, e, &opts, &b.split); err != nil {
		return b, err
	}
	c.skipMissingUpstream(e, specs, &opts, skip)
	// The online memory's chain is stored in the run; a dry run without a
	// run only needs its version.
	if c.AC3.Memory == MemoryOnline && opts.Analyzer != nil {
		var store memory.MetaStore
		if e.l != nil {
			store = e.l
		}
		b.online = memory.NewOnline(opts.Analyzer, store, c.FromTurn)
	}
	var strategies []curate.Strategy
	usesOnline := false
	for _, sp := range specs {
		if skip[sp.String()] != "" {
			continue
		}
		st, err := curate.OnlineByName(sp.String(), opts, b.online)
		if err != nil {
			return b, err
		}
		b.model = b.model || curate.NeedsModel(sp.Name)
		usesOnline = usesOnline || curate.UsesOnlineMemory(st)
		strategies = append(strategies, st)
	}
	if len(strategies) == 0 {
		e.logf("curate: no strategy left to run\n")
		return b, nil
	}
	if usesOnline {
		b.stage = curate.NewOnlineStage(strategies, counter, b.online)
		return b, nil
	}
	b.online = nil
	st := curate.NewStage(strategies, counter, c.FromTurn).WithLastTurns(c.LastTurns)
	if b.split.Excluded {
		st.WithLearningSplit(b.split.LastSeq)
		e.logf("curate: offline memory %s: the %d conversations it was learned on (seq <= %d) are left out of the strategies that use it and of the report (stages.curate.memory.include_learning: true keeps them)\n",
			b.split.Hash, b.split.Conversations, b.split.LastSeq)
	}
	b.stage = st
	return b, nil
}

// runInputs loads what the strategies read from the run: the offline
// cheatsheet and the fitted adaptive policy.
func (c *Curate) runInputs(ctx context.Context, e curateEnv, opts *curate.Options, split *memory.Split) error {
	if e.l == nil {
		return nil
	}
	if c.AC3.Memory == MemoryOffline {
		m, ok, err := memory.LoadOffline(ctx, e.l)
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("memory regime offline: this run has no learned cheatsheet; run 'ac3 memory learn' first")
		}
		opts.Memory = m.Memory()
		*split = memory.SplitOf(m, c.AC3.IncludeLearning)
	}
	if c.AC3.Adaptive.Policy == curate.PolicyScored {
		var err error
		if opts.Adaptive.Fitted, err = policy.Load(ctx, e.l); err != nil {
			return err
		}
		if p := opts.Adaptive.Fitted; p != nil && p.Paper() && e.client != nil {
			opts.Adaptive.Embed, opts.Adaptive.Embedder = embedderOf(e.client, curate.StageName)
		}
	}
	return nil
}

// skipMissingUpstream picks the constraints and classify variants the
// strategies read, and skips (with one line each) the strategies whose
// upstream stage is not in the plans.
func (c *Curate) skipMissingUpstream(e curateEnv, specs []curate.Spec, opts *curate.Options, skip map[string]string) {
	var ok bool
	if opts.Constraints, ok = curate.PickUpstream(e.plans[curate.ConstraintsStage], c.AC3.ConstraintsVariant); !ok {
		for _, sp := range specs {
			if sp.ReadsConstraints() && skip[sp.String()] == "" {
				skip[sp.String()] = "no constraints stage"
				e.logf("curate: skipping %s: the constraints stage has not run in this run (run it first; %s reads its registry)\n", sp, readerOf(sp))
			}
		}
	}
	if opts.Classify, ok = curate.PickUpstream(e.plans[curate.ClassifyStage], c.AC3.ClassifyVariant); !ok && c.AC3.Adaptive.Policy != curate.PolicyScored {
		for _, sp := range specs {
			if sp.Name == "adaptive" && skip[sp.String()] == "" {
				skip[sp.String()] = "no classify stage"
				e.logf("curate: skipping %s: policy %s needs the classify stage's turn types, which this run does not have (run classify first)\n", sp, curate.PolicyOmitOnNewAsk)
			}
		}
	}
}

// readerOf names what in sp reads the constraints registry.
func readerOf(sp curate.Spec) string {
	if sp.Constraints {
		return "the overlay"
	}
	return curate.CompactExtractSC
}

// curate curates every pending conversation. Model-backed strategies are
// skipped with one line when no endpoint is configured; the others still
// run.
func (r *runner) curate(ctx context.Context) (bool, error) {
	c := r.plan.Curate
	if c == nil {
		return true, nil
	}
	r.heading("curate (%s)", strings.Join(c.Strategies, ","))
	e := curateEnv{l: r.l, units: r.l, log: r.opts.Log, noCache: r.plan.Model.NoCache}
	var err error
	if e.plans, err = r.l.Plans(ctx); err != nil {
		return false, err
	}
	// A scored adaptive policy fitted on the paper's features embeds the
	// turns it scores; one on ours calls nothing, so without a usable
	// client it still runs.
	if c.needsModel() || c.scoresAdaptive() {
		counter, err := c.counter()
		if err != nil {
			return false, err
		}
		e.client, err = r.plan.Model.client(ctx, r.l, counter, r.opts.Progress)
		switch {
		case errors.Is(err, ErrNoEndpoint) || err != nil && !c.needsModel():
			e.client, e.noModel = nil, err
		case err != nil:
			return false, err
		}
	}
	b, err := c.build(ctx, e)
	if err != nil || b.stage == nil {
		return err == nil, err
	}
	if b.split.Hash != "" {
		// Recorded before curating, so a report of a run stopped part way
		// already knows which conversations to leave out.
		if err := memory.SaveSplit(ctx, r.l, b.split); err != nil {
			return false, err
		}
	}
	workers := c.Workers
	if b.online != nil {
		// Each conversation's analysis depends on the cheatsheet the ones
		// before it built, so they are taken one at a time in ingest order.
		if workers > 1 {
			r.logf("curate: online memory %s: conversations are curated one at a time, in ingest order (workers %d ignored)\n", b.online.Chain().ID, workers)
		}
		workers = 1
	}
	on, err := ledger.Origins(c.On...)
	if err != nil {
		return false, fmt.Errorf("curate on: %w", err)
	}
	res, err := r.runStage(ctx, stageRun{label: "curate", stage: b.stage, workers: workers, scope: on})
	if err != nil {
		return false, err
	}
	return r.addStage(res), nil
}

// scoresAdaptive reports whether c curates adaptive under the scored
// policy (with or without an overlay), which may embed the turns it scores.
func (c *Curate) scoresAdaptive() bool {
	specs, err := curate.ParseList(strings.Join(c.Strategies, ","))
	return err == nil && c.AC3.Adaptive.Policy == curate.PolicyScored &&
		slices.ContainsFunc(specs, func(sp curate.Spec) bool { return sp.Name == "adaptive" })
}

// needsModel reports whether a strategy of c calls the analyzer.
func (c *Curate) needsModel() bool {
	for _, s := range c.Strategies {
		if curate.NeedsModel(s) {
			return true
		}
	}
	return false
}
