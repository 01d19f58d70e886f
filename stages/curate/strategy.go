package curate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/curate/memory"
)

// Strategy builds curated contexts for the turns of a conversation.
//
// Deterministic strategies ignore ctx except to stop early; model-backed
// ones (summaries, AC3 reset and rewrite) use it for their calls and keep
// per-conversation state, such as resets so far, across the turns of one
// Contexts call. That is why a strategy sees a whole conversation at once
// rather than one turn. A Strategy value itself must be safe for concurrent
// use on different conversations, so any such state lives inside one call.
type Strategy interface {
	// Name is the strategy's short name, as used in LIST arguments.
	Name() string
	// Version changes whenever this strategy's output for the same input
	// would change (template text, placeholder, settings), so it can go into
	// unit keys. Token counts and filler lengths also depend on the counter's
	// encoding, which the caller's run configuration must key separately.
	Version() string
	// Contexts builds the curated context before each user turn t >= from,
	// in turn order. It may keep per-conversation state across turns. ws
	// must be a workspace for c.
	Contexts(ctx context.Context, c *conv.Conversation, from int, ws *Workspace) ([]curated.Context, error)
}

// DefaultFrom is the first turn evaluated by default: turn 1 has no history,
// so every strategy would give the same context.
const DefaultFrom = 2

// Options adjusts the strategies. The zero value gives the deterministic
// strategies with their defaults and refuses the model-backed ones and the
// +constraints overlay, which need the inputs below. Any setting that changes
// a strategy's output shows in its Version.
type Options struct {
	// AO is ao's placeholder and system note (also adaptive's, when it
	// chooses ao); the zero value gives ours. HuangAO gives Huang et al.'s.
	AO AOOptions

	// Analyzer makes the AC3 operators (augment, reset, gated-reset,
	// rewrite) and sum available; nil refuses them.
	Analyzer *analyze.Analyzer
	// Units reads other stages' stored units: the constraints registry for
	// +constraints and the classify turn types for adaptive. nil refuses
	// both. *ledger.Ledger satisfies it.
	Units UnitSource
	// Constraints and Classify say which variant (and version) of those
	// stages to read; see Upstream for the defaults.
	Constraints Upstream
	Classify    Upstream
	// Gates overrides the turn floor and reset cap of AC3 operators, by
	// operator name; operators not listed keep DefaultGate's. See Gate for
	// how floor and cap count.
	Gates map[string]Gate
	// ResetTemplate is the form reset and gated-reset give the history they
	// replace: ResetAC3 ("" too) or ResetWildChat.
	ResetTemplate ResetTemplate
	// Rewrite is the rewrite operator's prompt: analyze.RewriteAC3 ("" too)
	// or analyze.RewritePaper.
	Rewrite analyze.RewriteVariant
	// Sum is sum's form: SumAC3 ("" too) or SumPaper.
	Sum SumForm
	// Replay is how reset, gated-reset and rewrite build the turns after
	// they acted: ReplayContinue ("" too) or ReplayPrefix.
	Replay Replay
	// Adaptive configures the adaptive strategy.
	Adaptive AdaptiveOptions
	// Filler gives filler corpora to draw from (zero: ac3's sentences).
	Filler FillerOptions
	// Memory is the cheatsheet step 2 of the analysis receives (offline
	// regime); zero for none.
	Memory memory.Memory
	// Texts replace the AC3 operators' fixed texts (the reset template,
	// augment's note, the rewrite's frame) with users' templates.
	Texts Texts
	// Compact configures the compactors (recent-n, llm-compact,
	// extract-sc, plugin=NAME); see strategy_compact.go.
	Compact CompactOptions
	// Restate adds a line after u_t in the contexts gated-reset rebuilds
	// (zero: none).
	Restate Restate
}

// Restate is a line gated-reset's rebuilt contexts add after the user's
// latest message, for the conversations Text gives one for ("" for none):
// in the AC3 paper's LiC actions runs the Gated Reset row restates there
// the system prompt's instruction to repeat every function call, the other
// rows have it only in the system prompt (App. B.1.3). Name identifies it
// in gated-reset's version.
type Restate struct {
	Name string
	Text func(c *conv.Conversation) string `json:"-"`
}

// Names lists the deterministic strategies, the ones ByName builds.
func Names() []string { return []string{"fc", "ao", "lt", "de", "concat", "filler"} }

// modelNames are strategies that exist in the design but need a model, so
// they are built by the stages that call one. Naming them here turns "unknown
// strategy" into a clearer message.
var modelNames = []string{"sum", "adaptive", "augment", "reset", "gated-reset", "rewrite"}

// ErrNeedsConstraints is returned for a "+constraints" overlay when
// Options.Units is nil: the overlay reads the registry the constraints stage
// stored.
var ErrNeedsConstraints = errors.New("the +constraints overlay needs the session-constraint registry: run the constraints stage and give the strategy its units")

// ModelNames lists the strategies that need more than the conversation: a
// model (sum and the AC3 operators) or another stage's units (adaptive).
func ModelNames() []string { return slices.Clone(modelNames) }

// NeedsModel reports whether a strategy LIST item needs Options.Analyzer
// (adaptive and overlays alone do not).
func NeedsModel(name string) bool {
	s, err := parseSpec(name)
	return err == nil && (slices.Contains(modelNames, s.Name) && s.Name != "adaptive" || compactNeedsModel(s.Name))
}

// ByName returns the strategy called name, with the overlay it names
// ("fc+constraints"). Deterministic strategies need nothing but opts.AO
// (which fails ao and adaptive when it does not Validate); model-backed
// ones need opts.Analyzer (or, for adaptive, opts.Units or a fitted policy)
// and fail with an error saying so without it, and the AC3 operators fail on
// an unknown reset template, rewrite variant or replay mode; the overlay
// fails with ErrNeedsConstraints without opts.Units. An unknown name fails
// with an error that lists the valid ones.
func ByName(name string, opts Options) (Strategy, error) {
	spec, err := parseSpec(name)
	if err != nil {
		return nil, err
	}
	if spec.Name == "ao" || spec.Name == "adaptive" {
		if err := opts.AO.Validate(); err != nil {
			return nil, fmt.Errorf("building strategy %q: %w", spec, err)
		}
	}
	base, err := baseByName(spec, opts)
	if err != nil {
		return nil, err
	}
	if spec.Constraints {
		if opts.Units == nil {
			return nil, fmt.Errorf("building strategy %q: %w", spec, ErrNeedsConstraints)
		}
		return WithConstraints(base, opts.Units, opts.Constraints), nil
	}
	return base, nil
}

func modelByName(name string, opts Options) (Strategy, bool, error) {
	switch name {
	case curated.OpAugment, curated.OpReset, curated.OpGatedReset, curated.OpRewrite:
		if opts.Analyzer == nil {
			return nil, false, nil
		}
		g, ok := opts.Gates[name]
		if !ok {
			g = DefaultGate(name)
		}
		if g.Floor < 0 || g.Cap < 0 {
			return nil, false, fmt.Errorf("building strategy %q: floor and cap must be >= 0 (got %d, %d)", name, g.Floor, g.Cap)
		}
		f, err := formOf(opts)
		if err != nil {
			return nil, false, fmt.Errorf("building strategy %q: %w", name, err)
		}
		return newOperator(name, opts.Analyzer, g, f, opts.Memory), true, nil
	case "sum":
		if opts.Analyzer == nil {
			return nil, false, nil
		}
		return newSummarized(opts.Analyzer, opts.Sum), true, nil
	case "adaptive":
		s, err := newAdaptive(opts)
		if errors.Is(err, errAdaptiveInputs) {
			return nil, false, nil
		}
		return s, err == nil, err
	}
	return nil, false, nil
}

func baseByName(spec Spec, opts Options) (Strategy, error) {
	if s, ok, err := modelByName(spec.Name, opts); ok || err != nil {
		return s, err
	}
	if s, ok, err := compactorByName(spec.Name, opts); s != nil || err != nil {
		return s, err
	} else if ok {
		return nil, fmt.Errorf("building strategy %q: it needs a model; configure an endpoint for the analyzer role (or stages.curate.llm_compact.role)", spec.Name)
	}
	switch spec.Name {
	case "fc":
		return FullContext{}, nil
	case "ao":
		return NewAssistantOmission(opts), nil
	case "lt":
		return LastTurn{}, nil
	case "de":
		return DeleteEverything{}, nil
	case "concat":
		return ConcatUser{}, nil
	case "filler":
		if err := opts.Filler.Validate(); err != nil {
			return nil, fmt.Errorf("building strategy %q: %w", spec.Name, err)
		}
		return Filler{Options: opts.Filler}, nil
	}
	if spec.Name == "adaptive" {
		return nil, fmt.Errorf("building strategy %q: it needs the classify stage's turn types (policy %s) or a policy fitted by 'ac3 policy fit' (policy %s)",
			spec.Name, PolicyOmitOnNewAsk, PolicyScored)
	}
	if slices.Contains(modelNames, spec.Name) {
		return nil, fmt.Errorf("building strategy %q: it needs a model; configure an endpoint for the analyzer role (deterministic strategies: %s)",
			spec.Name, strings.Join(Names(), ", "))
	}
	return nil, fmt.Errorf("building strategy %q: unknown strategy (valid: %s; with a model: %s; compactors: %s)",
		spec.Name, strings.Join(Names(), ", "), strings.Join(modelNames, ", "), strings.Join(CompactorNames(), ", "))
}

// Spec is one item of a strategy LIST: a strategy name and the overlays
// added to it with "+".
type Spec struct {
	Name string
	// Constraints asks for the session-constraint registry to be appended
	// to the curated context ("name+constraints").
	Constraints bool
}

// String renders the spec as it is written in a LIST.
func (s Spec) String() string {
	if s.Constraints {
		return s.Name + "+constraints"
	}
	return s.Name
}

// ParseList parses a comma-separated strategy LIST such as "fc,ao,lt" or
// "ao+constraints,fc". It checks syntax only (empty items, unknown overlays,
// repeats); ByName decides whether a name can be built.
func ParseList(list string) ([]Spec, error) {
	var specs []Spec
	seen := map[Spec]bool{}
	for item := range strings.SplitSeq(list, ",") {
		s, err := parseSpec(item)
		if err != nil {
			return nil, err
		}
		if seen[s] {
			return nil, fmt.Errorf("parsing strategy list %q: %q appears twice", list, s)
		}
		seen[s] = true
		specs = append(specs, s)
	}
	return specs, nil
}

func parseSpec(item string) (Spec, error) {
	fields := strings.Split(strings.TrimSpace(item), "+")
	s := Spec{Name: strings.TrimSpace(fields[0])}
	if s.Name == "" {
		return Spec{}, fmt.Errorf("parsing strategy %q: empty strategy name", item)
	}
	for _, o := range fields[1:] {
		switch strings.TrimSpace(o) {
		case "constraints":
			if s.Constraints {
				return Spec{}, fmt.Errorf("parsing strategy %q: overlay %q given twice", item, "constraints")
			}
			s.Constraints = true
		default:
			return Spec{}, fmt.Errorf("parsing strategy %q: unknown overlay %q (valid: constraints)", item, o)
		}
	}
	return s, nil
}

// Resolve parses a LIST and builds each strategy in it.
func Resolve(list string, opts Options) ([]Strategy, error) {
	specs, err := ParseList(list)
	if err != nil {
		return nil, err
	}
	out := make([]Strategy, 0, len(specs))
	for _, s := range specs {
		st, err := ByName(s.String(), opts)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// versionOf appends a short hash of non-default settings to a base version,
// so changed settings change the unit key while defaults keep a readable one.
func versionOf(base string, settings ...string) string {
	h := sha256.New()
	for _, s := range settings {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	return base + "+" + hex.EncodeToString(h.Sum(nil)[:4])
}
