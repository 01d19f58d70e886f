// Package measure is the CompInt measurement stage: for every CompInt
// instance stored in a run (package compint builds them; the run derives
// them from ingested conversations), it asks the compliance question from
// the full context and from each strategy's context, and asks a judge
// whether the strategy kept the session constraint. What the numbers mean
// and how they combine is package compint's; this package makes the calls,
// stores one unit per instance and variant, and folds the units into the
// report's CompInt section (summary.go).
package measure

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/compint"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
)

// StageName is the stage's name in unit keys, status and reports.
const StageName = "compint"

// Origin is the origin of the conversations the run derives as CompInt
// instances; the stage runs over them only.
const Origin = "compint"

// LongVariant is the variant that asks the compliance question from the
// instance's full context: the LongWithSC group on an instance with the SC,
// LongNoSC on its baseline. Every other variant is a curate strategy.
const LongVariant = "long"

// version is bumped when what a unit stores or how it is produced changes.
const version = "compint-measure/v1"

// Default roles.
const (
	DefaultJudgeRole = "judge"
	DefaultProbeRole = "respondent"
)

// UnitReader reads stored units of earlier stages; *ledger.Ledger
// satisfies it.
type UnitReader interface {
	ConversationUnits(ctx context.Context, stage, convID string, turn int) ([]ledger.Unit, error)
}

// ConversationReader reads a stored conversation by id: the clean upper
// bound reads an instance's baseline with it. *ledger.Ledger satisfies it.
type ConversationReader interface {
	Conversation(ctx context.Context, id string) (ledger.Stored, bool, error)
}

// Options configure the stage.
type Options struct {
	// Strategies are the curate variants whose contexts are scored.
	Strategies []string
	// CurateVersions gives, per strategy, the curate version to read.
	CurateVersions map[string]string
	// Set is the SC set the instances were built from; an instance whose
	// SC is not in it, or differs from it, fails its units.
	Set *compint.Set
	// Orders is how the two options are laid out (default random, one
	// seeded order per context and SC); Seed seeds it.
	Orders compint.OrderMode
	Seed   uint64
	// UpperBound is the context the upper-bound group starts from:
	// compint.UBClean (default), the paper's C(H) ⊕ s, takes the
	// strategy's context of the instance's WithoutSC baseline at its probe
	// turn (curate must run on the baselines too, as `on: [compint]`
	// does, and the UnitReader must also be a ConversationReader);
	// compint.UBInjected, C(H_s) ⊕ s, takes the same context as the
	// Compacted group.
	UpperBound compint.UpperBoundBase
	// JudgeRole decides retention; ProbeRole answers the compliance
	// questions. Their Settings describe the models bound to them, so a
	// change makes the work pending again.
	JudgeRole, ProbeRole         string
	JudgeSettings, ProbeSettings string
	// Retries is how many times an unparseable answer is asked again
	// (default 2).
	Retries int
	// Prompts replace the probe's and the retention judge's prompts with
	// users' templates (nil fields keep ours); their versions go into every
	// variant's.
	Prompts compint.Prompts
}

// Stage is the CompInt measurement stage.
type Stage struct {
	client   *llm.Client
	units    UnitReader
	opts     Options
	variants []pipeline.Variant
	curate   map[string]string // strategy → curate version
}

// New returns the stage. It fails on a strategy without a curate version
// and on options it cannot honour.
func New(client *llm.Client, units UnitReader, opts Options) (*Stage, error) {
	if opts.Set == nil {
		opts.Set = compint.Default()
	}
	if opts.Orders == "" {
		opts.Orders = compint.RandomOrder
	}
	if _, err := compint.Orders(opts.Orders, 0, "", 0); err != nil {
		return nil, fmt.Errorf("compint: %w", err)
	}
	switch opts.UpperBound {
	case "":
		opts.UpperBound = compint.UBClean
	case compint.UBClean, compint.UBInjected:
	default:
		return nil, fmt.Errorf("compint: upper bound %q is not supported (want %s, the paper's C(H) ⊕ s, or %s, C(H_s) ⊕ s)", opts.UpperBound, compint.UBClean, compint.UBInjected)
	}
	opts.JudgeRole = cmp.Or(opts.JudgeRole, DefaultJudgeRole)
	opts.ProbeRole = cmp.Or(opts.ProbeRole, DefaultProbeRole)
	if opts.Retries <= 0 {
		opts.Retries = 2
	}
	if err := opts.Prompts.Check(); err != nil {
		return nil, fmt.Errorf("compint: %w", err)
	}
	base := strings.Join([]string{version, opts.Prompts.ProbeTemplate().Version(), opts.Prompts.RetentionTemplate().Version(),
		"orders=" + string(opts.Orders), "seed=" + strconv.FormatUint(opts.Seed, 10), "ub=" + string(opts.UpperBound),
		"scs=" + opts.Set.Hash(), "probe=" + opts.ProbeSettings}, ";")
	s := &Stage{client: client, units: units, opts: opts, curate: map[string]string{}}
	s.variants = append(s.variants, pipeline.Variant{Name: LongVariant, Version: base})
	for _, name := range opts.Strategies {
		if name == LongVariant {
			return nil, fmt.Errorf("compint: a strategy may not be called %q", LongVariant)
		}
		cv, ok := opts.CurateVersions[name]
		if !ok {
			return nil, fmt.Errorf("compint: strategy %q is not in the curate plan: curate it first", name)
		}
		if _, dup := s.curate[name]; dup {
			continue
		}
		s.curate[name] = cv
		s.variants = append(s.variants, pipeline.Variant{Name: name,
			Version: base + ";judge=" + opts.JudgeSettings + ";curate=" + cv})
	}
	return s, nil
}

// Name implements pipeline.Stage.
func (s *Stage) Name() string { return StageName }

// Prompts returns the prompts the stage renders, for the run to say which
// ones are in use.
func (s *Stage) Prompts() []*prompt.Template {
	return []*prompt.Template{s.opts.Prompts.ProbeTemplate(), s.opts.Prompts.RetentionTemplate()}
}

// Variants implements pipeline.Stage.
func (s *Stage) Variants() []pipeline.Variant { return s.variants }

// Scope implements pipeline.Scoped: CompInt instances only.
func (s *Stage) Scope() ledger.Scope { return ledger.MustOrigins(Origin) }

// ModelWindow implements pipeline.ModelStage.
func (s *Stage) ModelWindow() int {
	return pipeline.DefaultWindow(s.client, s.opts.JudgeRole, s.opts.ProbeRole)
}

// GroupResult is one compliance group's answers for one instance.
type GroupResult struct {
	Group   compint.Group    `json:"group"`
	Choices []compint.Choice `json:"choices"` // one per order asked, in Orders' order
	Orders  []compint.Order  `json:"orders"`
	Score   float64          `json:"score"` // share of orders answered compliantly
}

// Retention is the judge's verdict on a strategy's context, with the cheap
// wording match beside it.
type Retention struct {
	Retained bool             `json:"retained"`
	Evidence compint.Evidence `json:"evidence"`
}

// Output is what one unit stores: one instance under one variant.
type Output struct {
	Instance string           `json:"instance"`
	BaseID   string           `json:"base_id"`
	Baseline string           `json:"baseline,omitempty"`
	Kind     compint.Kind     `json:"kind"`
	SCID     int              `json:"sc_id"`
	SCType   string           `json:"sc_type"`
	Location compint.Location `json:"location,omitempty"`
	Framing  compint.Framing  `json:"framing,omitempty"`
	// Strategy is the curate strategy scored, "" for LongVariant.
	Strategy      string        `json:"strategy,omitempty"`
	ContextTokens int           `json:"context_tokens,omitempty"`
	Groups        []GroupResult `json:"groups"`
	Retention     *Retention    `json:"retention,omitempty"`
}

// Decode reads a stored unit's output.
func Decode(b []byte) (Output, error) {
	var o Output
	if err := json.Unmarshal(b, &o); err != nil {
		return o, fmt.Errorf("decoding compint output: %w", err)
	}
	return o, nil
}

// call is one model call of a task.
type call struct {
	unit   int
	group  int // index into the unit's Groups, or -1 for the retention judge
	order  int // index into the group's orders
	msgs   []conv.Message
	mcq    compint.MCQ
	tagger parse.Tagger
}

type unitState struct {
	result int // index into the results
	out    Output
	failed string
	raw    string
}

// Process implements pipeline.Stage. A task that is not a CompInt instance
// gets no units; a strategy whose curated context of the probe turn is
// missing or failed gives no unit (curate records why). An instance whose
// SC is not the one configured fails its units: the set changed since the
// instances were built.
func (s *Stage) Process(ctx context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	results := make([]pipeline.Result, len(t.Variants))
	for i, v := range t.Variants {
		results[i].Variant = v
	}
	meta, ok, err := compint.ReadMeta(t.Conv)
	if err != nil {
		return failAll(results, meta.ProbeTurn, err.Error()), nil
	}
	if !ok {
		return results, nil
	}
	sc, found := s.opts.Set.Get(meta.SCID)
	if !found || sc.Hash() != meta.SCHash {
		return failAll(results, meta.ProbeTurn, fmt.Sprintf("instance %s was built with SC %d (hash %s), which the configured SC set does not hold as it was: rebuild the instances or point to the set they came from", t.Conv.ID, meta.SCID, meta.SCHash)), nil
	}
	orders, err := compint.Orders(s.opts.Orders, s.opts.Seed, meta.BaseID, meta.SCID)
	if err != nil {
		return nil, err
	}
	var stored []ledger.Unit
	var clean *cleanBase
	if meta.Kind == compint.WithSC && len(s.curate) > 0 {
		stored, err = s.units.ConversationUnits(ctx, curate.StageName, t.Conv.ID, meta.ProbeTurn)
		if err != nil {
			return nil, fmt.Errorf("reading curated contexts of %s: %w", t.Conv.ID, err)
		}
		if s.opts.UpperBound == compint.UBClean {
			if clean, err = s.baseline(ctx, t.Conv.ID, meta); err != nil {
				return nil, err
			}
		}
	}
	var states []*unitState
	var calls []call
	probe := func(u int, g compint.Group, msgs []conv.Message) error {
		st := states[u]
		gi := len(st.out.Groups)
		st.out.Groups = append(st.out.Groups, GroupResult{Group: g, Orders: orders, Choices: make([]compint.Choice, len(orders))})
		for oi, o := range orders {
			pm, q, err := s.opts.Prompts.ProbeMessages(msgs, sc, g, meta.Framing, o)
			if err != nil {
				return err
			}
			calls = append(calls, call{unit: u, group: gi, order: oi, msgs: pm, mcq: q})
		}
		return nil
	}
	newState := func(ri int, strategy string) *unitState {
		st := &unitState{result: ri, out: Output{Instance: t.Conv.ID, BaseID: meta.BaseID, Baseline: meta.BaselineID,
			Kind: meta.Kind, SCID: meta.SCID, SCType: meta.SCType, Location: meta.Location, Framing: meta.Framing, Strategy: strategy}}
		states = append(states, st)
		return st
	}
	for ri, v := range t.Variants {
		if v.Name == LongVariant {
			full, ok := t.Conv.ContextBefore(meta.ProbeTurn)
			if !ok {
				return nil, fmt.Errorf("instance %s has no user turn %d", t.Conv.ID, meta.ProbeTurn)
			}
			st := newState(ri, "")
			g := compint.LongNoSC
			if meta.Kind == compint.WithSC {
				g = compint.LongWithSC
			}
			if err := probe(len(states)-1, g, full); err != nil {
				st.failed = err.Error()
			}
			continue
		}
		cv, ok := s.curate[v.Name]
		if !ok {
			return nil, fmt.Errorf("scoring %s: no variant %q", t.Conv.ID, v.Name)
		}
		if meta.Kind != compint.WithSC {
			continue // a baseline has only the long group
		}
		i := slices.IndexFunc(stored, func(u ledger.Unit) bool {
			return u.Variant == v.Name && u.Version == cv && u.Turn == meta.ProbeTurn && u.Status == ledger.Done
		})
		if i < 0 {
			continue
		}
		x, err := curated.DecodeContext(stored[i].Output)
		if err != nil {
			return nil, fmt.Errorf("decoding curated context %s: %w", stored[i].Key, err)
		}
		msgs, err := x.MaterializeChecked(t.Conv)
		if err != nil {
			return nil, fmt.Errorf("curated context %s does not fit conversation %s: %w", stored[i].Key, t.Conv.ID, err)
		}
		st := newState(ri, v.Name)
		st.out.ContextTokens = x.Tokens
		u := len(states) - 1
		kept, err := compint.RetentionContext(msgs, sc.Probe)
		if err == nil {
			var jm []conv.Message
			var tg parse.Tagger
			jm, tg, err = s.opts.Prompts.RetentionMessages(sc, kept)
			if err == nil {
				st.out.Retention = &Retention{Evidence: compint.MatchEvidence(sc.Text, kept)}
				calls = append(calls, call{unit: u, group: -1, msgs: jm, tagger: tg})
				err = probe(u, compint.Compacted, msgs)
			}
			if err == nil {
				ub := msgs
				if clean != nil {
					ub, err = clean.context(v.Name, cv)
				}
				if err == nil {
					err = probe(u, compint.UpperBound, ub)
				}
			}
		}
		if err != nil {
			st.failed = fmt.Sprintf("strategy %s: %v", v.Name, err)
		}
	}
	type answer struct {
		choice   compint.Choice
		retained bool
		err      error
	}
	answers := make([]answer, len(calls))
	// The calls go out in the order they were made, one instance's
	// together: the long context's probes side by side, then per strategy
	// the retention judge and the probes on its context (its orders, the
	// compacted and the upper-bound group, which share every message but
	// the last). The instances of one base context follow one another in
	// the run (Builder.Expand's order), and the retention prompt shows the
	// context before the SC, so a provider's prompt cache still holds what
	// they share.
	err = t.Each(ctx, len(calls), 0, func(ctx context.Context, k int) error {
		c := calls[k]
		if states[c.unit].failed != "" {
			return nil
		}
		var a answer
		if c.group < 0 {
			req := llm.Request{Role: s.opts.JudgeRole, Stage: StageName, Messages: c.msgs, Reroll: t.Retry * (s.opts.Retries + 1)}
			a.retained, _, a.err = llm.CallParsed(ctx, s.client, req, s.opts.Retries, compint.RetentionParser(c.tagger))
		} else {
			req := llm.Request{Role: s.opts.ProbeRole, Stage: StageName, Messages: c.msgs, Reroll: t.Retry * (s.opts.Retries + 1)}
			a.choice, _, a.err = llm.CallParsed(ctx, s.client, req, s.opts.Retries, c.mcq.Parser())
		}
		if _, unit := llm.UnitFailure(a.err); a.err != nil && !unit {
			return a.err
		}
		answers[k] = a
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scoring %s: %w", t.Conv.ID, err)
	}
	for k, c := range calls {
		st, a := states[c.unit], answers[k]
		if st.failed != "" {
			continue
		}
		if a.err != nil {
			st.failed = a.err.Error()
			st.raw, _ = llm.UnitFailure(a.err)
			continue
		}
		if c.group < 0 {
			st.out.Retention.Retained = a.retained
		} else {
			st.out.Groups[c.group].Choices[c.order] = a.choice
		}
	}
	for _, st := range states {
		u := pipeline.Unit{Turn: meta.ProbeTurn, Attempts: 1, Tokens: int64(st.out.ContextTokens)}
		if st.failed != "" {
			u.Failed, u.Error, u.Raw = true, st.failed, st.raw
		} else {
			for i := range st.out.Groups {
				st.out.Groups[i].Score, _, _ = compint.Score(st.out.Groups[i].Choices)
			}
		}
		b, err := json.Marshal(st.out)
		if err != nil {
			return nil, fmt.Errorf("encoding the score of %s: %w", t.Conv.ID, err)
		}
		u.Output = b
		results[st.result].Units = append(results[st.result].Units, u)
	}
	return results, nil
}

func failAll(results []pipeline.Result, turn int, why string) []pipeline.Result {
	for i := range results {
		results[i].Units = []pipeline.Unit{{Turn: max(turn, 1), Failed: true, Error: why, Attempts: 1}}
	}
	return results
}

// Instances is the step that derives CompInt instances from a run's
// conversations (pipeline.Derive with origin Origin over the ingested
// ones): it stitches the conversations in seq order with st and expands
// every finished context with bd, naming as parent the conversation that
// completed the context. A context still short of its target when the
// conversations run out is dropped, as the paper drops it. st carries the
// context in progress, so a fresh Stitcher is needed for every walk.
func Instances(st *compint.Stitcher, bd *compint.Builder) pipeline.Visit {
	return func(ctx context.Context, s ledger.Stored, emit pipeline.Emit) error {
		if st.Done() {
			return nil
		}
		b := st.Add(s.Conv)
		if b == nil {
			return nil
		}
		return bd.Expand(b, func(in *compint.Instance) error { return emit(s.Seq, in.Conv) })
	}
}

// cleanBase is an instance's WithoutSC baseline and its curated contexts
// of its probe turn: what the clean upper bound C(H) ⊕ s starts from.
type cleanBase struct {
	conv   *conv.Conversation
	turn   int
	units  []ledger.Unit
	reason string // why there is none, when conv is nil
}

// baseline reads the baseline of instance id for the clean upper bound. A
// baseline that cannot be read is a reason recorded for the units that
// need it; a store failure is an error.
func (s *Stage) baseline(ctx context.Context, id string, meta compint.Meta) (*cleanBase, error) {
	cr, ok := s.units.(ConversationReader)
	if !ok {
		return &cleanBase{reason: "the clean upper bound needs the run's conversations"}, nil
	}
	if meta.BaselineID == "" {
		return &cleanBase{reason: fmt.Sprintf("instance %s names no baseline", id)}, nil
	}
	st, found, err := cr.Conversation(ctx, meta.BaselineID)
	if err != nil {
		return nil, fmt.Errorf("reading baseline %s of %s: %w", meta.BaselineID, id, err)
	}
	if !found {
		return &cleanBase{reason: fmt.Sprintf("baseline %s of %s is not in the run", meta.BaselineID, id)}, nil
	}
	bm, ok, err := compint.ReadMeta(st.Conv)
	if err != nil || !ok {
		return &cleanBase{reason: fmt.Sprintf("baseline %s of %s is not a CompInt instance", meta.BaselineID, id)}, nil
	}
	units, err := s.units.ConversationUnits(ctx, curate.StageName, st.Conv.ID, bm.ProbeTurn)
	if err != nil {
		return nil, fmt.Errorf("reading curated contexts of baseline %s: %w", st.Conv.ID, err)
	}
	return &cleanBase{conv: st.Conv, turn: bm.ProbeTurn, units: units}, nil
}

// context is strategy's context (curate version cv) of the baseline's
// probe turn: C(H), to which the upper bound adds s.
func (b *cleanBase) context(strategy, cv string) ([]conv.Message, error) {
	if b.conv == nil {
		return nil, fmt.Errorf("upper bound (clean): %s", b.reason)
	}
	i := slices.IndexFunc(b.units, func(u ledger.Unit) bool {
		return u.Variant == strategy && u.Version == cv && u.Turn == b.turn && u.Status == ledger.Done
	})
	if i < 0 {
		return nil, fmt.Errorf("upper bound (clean): baseline %s has no curated %s context of turn %d: curate the baselines too (curate on: [compint]), or set upper_bound: injected", b.conv.ID, strategy, b.turn)
	}
	x, err := curated.DecodeContext(b.units[i].Output)
	if err != nil {
		return nil, fmt.Errorf("decoding curated context %s: %w", b.units[i].Key, err)
	}
	msgs, err := x.MaterializeChecked(b.conv)
	if err != nil {
		return nil, fmt.Errorf("curated context %s does not fit baseline %s: %w", b.units[i].Key, b.conv.ID, err)
	}
	return msgs, nil
}
