package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate"
)

// curateArgs is what a curate run needs. The last three fields matter only
// for model-backed strategies and overlays: llm says how to build a client
// (ignored when client is already set, as `ac3 run` may share one), and ac3
// holds the AC3 operator settings (see ac3Settings).
type curateArgs struct {
	strategies string
	fromTurn   int
	encoding   string
	workers    int

	llm    llmSettings
	client *llmRun
	ac3    ac3Settings
}

func curateCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "curate",
		Usage: "build the context a respondent would see before each turn, per strategy",
		Description: `For every kept conversation and every user turn t >= --from-turn, builds the
context a model would be given before answering turn t, under each strategy in
--strategies, and records its size in tokens:

   fc      full context: everything before the reply
   ao      assistant omission: assistant turns replaced by a placeholder, with a
           system note saying what the placeholders are
   lt      last turn: only the previous user–assistant exchange, then the turn
   de      delete everything: only the current user message
   concat  all user turns so far joined into one user message
   filler  assistant turns replaced by neutral text of the same token length
           (separates pollution from plain context length)

With a model endpoint (OPENAI_BASE_URL/OPENAI_API_KEY, or --config), the AC3
operators and the other model-backed strategies:

   augment      C_t followed by the AC3 analysis (spec, aligned, issues), on
                every turn after a warm-up (--warmup, default 2 turns)
   reset        when the analysis finds issues, the history is replaced by a
                fixed template holding the spec and the aligned work, then u_t;
                otherwise the context is unchanged (no extra call)
   gated-reset  reset that skips the first --floor user turns (default 2) and
                resets at most --cap times per conversation (default 3); the
                default AC3 operator
   rewrite      when issues are found, one more call writes a compact briefing
                that replaces the history, then u_t
   sum          each assistant reply replaced by a one-sentence summary (one
                call per reply, reused by every later turn)
   adaptive     fc or ao per turn: ao on new_ask turns (--adaptive-policy
                omit-on-new-ask, needs the classify stage), or keep fc iff
                P(fc wins) - lambda*delta >= tau (scored, needs 'ac3 policy fit')

and the overlay NAME+constraints (any strategy), which appends the session
constraints in force at turn t (from the constraints stage) in a marked block,
also after a reset or a rewrite.

The AC3 analysis runs once per turn and is shared by every operator: step 1
reads only the system message and the user's messages (the assistant's turns
never reach it), step 2 compares the full context against that specification.
After a reset at turn k, later turns continue from the reset context: the
template and u_k, then the logged messages after u_k up to u_t, until the next
reset. Every curated context records the operator's decision, resets so far,
the analysis and the calls and dollars it took; 'ac3 inspect' shows them.

--memory (stages.curate.memory.regime in the config) gives step 2 of the
analysis a plain-text cheatsheet of lessons from other conversations, at most
1,500 words:

   off      no cheatsheet (the default)
   offline  the frozen cheatsheet 'ac3 memory learn' stored in the run; its
            hash is in the operators' versions
   online   a cheatsheet updated as the run goes: conversations are curated
            one at a time in ingest order; after each, every turn from
            --from-turn is analyzed (the operators reuse these analyses), one
            reflection call turns the analyses into takeaways and one unify
            call merges them in, and the result is what step 2 of the next
            conversation receives. A conversation the analyzer cannot read
            leaves the cheatsheet unchanged. Every version is stored in the
            run before the conversation's contexts are committed, so a
            resumed run continues from the last one and gives the same
            result; 'ac3 memory show' prints them. The operators' versions
            say memory=online:<chain>; each context records the hash of the
            cheatsheet it was given (online:none before the first update).

--ablation-contagious-extractor and --ablation-single-pass reproduce the
paper's ablations (step 1 sees the assistant's turns; one single analysis
call). They are for research only, off by default, and labelled ABLATION in
every variant version and curated record.

The system message, when there is one, is kept by every strategy. Each strategy
is a separate variant: changing one strategy's settings recomputes only its
units. Strategies that need a model are skipped, with one line saying what to
configure, when no endpoint is configured.

Examples:
   ac3 curate --db run.db --strategies fc,ao,lt,de
   ac3 curate --db run.db --strategies filler --from-turn 3 --encoding cl100k_base
   OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_MODEL=qwen3-8b \
     ac3 curate --db run.db --strategies fc,ao,gated-reset,gated-reset+constraints
   ac3 curate --db run.db --config run.yaml --strategies augment,rewrite --warmup 3
   ac3 curate --db run.db --strategies augment --ablation-contagious-extractor
   ac3 curate --db run.db --strategies fc,gated-reset --memory online`,
		Flags: append([]cli.Flag{
			dbFlag,
			&cli.StringFlag{Name: "strategies", Value: "fc,ao,lt,de", Usage: "comma-separated: " + strings.Join(curate.Names(), ", ") + "; with a model: " + strings.Join(curate.ModelNames(), ", ") + "; any NAME+constraints"},
			&cli.IntFlag{Name: "from-turn", Value: curate.DefaultFrom, Usage: "first user turn to curate (turn 1 has no history)"},
			&cli.StringFlag{Name: "encoding", Value: tokens.DefaultEncoding, Usage: "tokenizer encoding for token counts (o200k_base, cl100k_base, ...)"},
			&cli.IntFlag{Name: "workers", Value: 2, Usage: "conversations curated in parallel"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print what would be done, do nothing"},
		}, append(ac3Flags(), llmFlags()...)...),
		Action: func(c *cli.Context) error {
			a := curateArgs{strategies: c.String("strategies"), fromTurn: c.Int("from-turn"), encoding: c.String("encoding"), workers: c.Int("workers")}
			var err error
			if a.llm, err = llmSettingsFrom(c, e); err != nil {
				return err
			}
			if a.ac3, err = ac3SettingsFrom(c, a.llm.cfg); err != nil {
				return err
			}
			if c.Bool("dry-run") {
				l, err := openRun(c.Context, c, true)
				if err != nil {
					return err
				}
				defer l.Close()
				return dryRunCurate(c.Context, e.stdout, l, a)
			}
			l, err := openRun(c.Context, c, false)
			if err != nil {
				return err
			}
			defer l.Close()
			_, err = runCurate(c.Context, e, l, a)
			return err
		},
	}
}

// runCurate curates every pending conversation. It reports whether all work
// is done (false when a Ctrl-C or the budget stopped it). Model-backed
// strategies get a.client, or a client built from a.llm; when no endpoint is
// configured they are skipped with one line and the others still run.
func runCurate(ctx context.Context, e *env, l *ledger.Ledger, a curateArgs) (bool, error) {
	st, plan, err := curateStage(ctx, e, l, &a, false)
	if err != nil || st == nil {
		return st == nil && err == nil, err
	}
	if plan.online != nil {
		// Each conversation's analysis depends on the cheatsheet the ones
		// before it built, so they are taken one at a time in ingest order.
		if a.workers > 1 {
			fmt.Fprintf(e.stdout, "curate: online memory %s: conversations are curated one at a time, in ingest order (workers %d ignored)\n", plan.online.Chain().ID, a.workers)
		}
		a.workers = 1
	}
	return runStage(ctx, e, l, "curate", st, a.workers, false)
}

func toLedger(vs []pipeline.Variant) []ledger.Variant {
	out := make([]ledger.Variant, len(vs))
	for i, v := range vs {
		out[i] = ledger.Variant(v)
	}
	return out
}

func dryRunCurate(ctx context.Context, w io.Writer, l *ledger.Ledger, a curateArgs) error {
	quiet := &env{stdout: w, stderr: io.Discard, getenv: func(string) string { return "" }}
	st, plan, err := curateStage(ctx, quiet, l, &a, true)
	if err != nil {
		return err
	}
	from := a.fromTurn
	if from <= 0 {
		from = curate.DefaultFrom // what the stage uses when none is set
	}
	fmt.Fprintf(w, "2. curate strategies %s from turn %d\n", a.strategies, from)
	if st == nil {
		return nil
	}
	if l == nil {
		fmt.Fprintln(w, "   (the run does not exist yet: every conversation ingested will be curated)")
		return nil
	}
	n, err := l.CountConversations(ctx)
	if err != nil {
		return err
	}
	for _, v := range st.Variants() {
		done, failed, err := l.TaskCounts(ctx, st.Name(), ledger.Variant(v))
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "   %-8s %d conversations pending, %d done, %d failed\n", v.Name, n-done-failed, done, failed)
	}
	if plan.model {
		return dryRunModelCalls(ctx, w, l, a, plan)
	}
	return nil
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// ac3Settings are the settings of the AC3 operators and the other
// model-backed strategies, from stages.curate in the config file and the
// curate flags (flags win).
type ac3Settings struct {
	gates    map[string]curate.Gate
	ablation analyze.Ablation
	adaptive curate.AdaptiveOptions
	memory   string // memoryOff | memoryOffline | memoryOnline
	// constraintsVariant and classifyVariant pick the upstream variant;
	// "" prefers llm, then heuristic, from the stage's current plan.
	constraintsVariant, classifyVariant string
	retries                             int
}

// ac3Config is the config file's form of ac3Settings: the extra keys of
// stages.curate, e.g.
//
//	gated_reset: {floor: 2, cap: 3}
//	reset: {floor: 0}
//	rewrite: {floor: 3}
//	augment: {warmup: 3}
//	adaptive: {policy: scored, lambda: 0.1, tau: 0.5}
//	memory: {regime: offline}   # or online; off by default
//	constraints: {variant: llm}
//	classify: {variant: heuristic}
//	analyzer_retries: 2
//	ablation: contagious-extractor   # research only
type ac3Config struct {
	GatedReset *gateConfig `yaml:"gated_reset"`
	Reset      *gateConfig `yaml:"reset"`
	Rewrite    *gateConfig `yaml:"rewrite"`
	Augment    *struct {
		Warmup *int `yaml:"warmup"`
	} `yaml:"augment"`
	Adaptive *struct {
		Policy string   `yaml:"policy"`
		Lambda *float64 `yaml:"lambda"`
		Tau    *float64 `yaml:"tau"`
	} `yaml:"adaptive"`
	Memory *struct {
		Regime string `yaml:"regime"`
	} `yaml:"memory"`
	Constraints *struct {
		Variant string `yaml:"variant"`
	} `yaml:"constraints"`
	Classify *struct {
		Variant string `yaml:"variant"`
	} `yaml:"classify"`
	AnalyzerRetries int    `yaml:"analyzer_retries"`
	Ablation        string `yaml:"ablation"`
}

type gateConfig struct {
	Floor *int `yaml:"floor"`
	Cap   *int `yaml:"cap"`
}

func ac3Flags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "warmup", Usage: "augment: user turns before it starts appending the analysis (default 2)"},
		&cli.IntFlag{Name: "floor", Usage: "gated-reset: user turns it never resets at (default 2)"},
		&cli.IntFlag{Name: "cap", Usage: "gated-reset: most resets per conversation (default 3)"},
		&cli.StringFlag{Name: "adaptive-policy", Usage: "adaptive: omit-on-new-ask (needs classify) | scored (needs 'ac3 policy fit')"},
		&cli.Float64Flag{Name: "lambda", Usage: "adaptive scored: cost weight λ on the relative assistant-history length (default 0)"},
		&cli.Float64Flag{Name: "tau", Usage: "adaptive scored: keep fc iff P(fc wins) − λ·Δ ≥ τ (default 0.5)"},
		&cli.StringFlag{Name: "memory", Usage: "AC3 memory given to step 2: off | offline (the cheatsheet 'ac3 memory learn' stored) | online (updated after each conversation, in ingest order; one worker)"},
		&cli.StringFlag{Name: "constraints-variant", Usage: "+constraints: which constraints variant to read (default llm, else heuristic)"},
		&cli.StringFlag{Name: "classify-variant", Usage: "adaptive: which classify variant to read (default llm, else heuristic)"},
		&cli.BoolFlag{Name: "ablation-contagious-extractor", Usage: "RESEARCH ABLATION: let AC3 step 1 see the assistant's turns (reproduces the contagion result); labelled in every output"},
		&cli.BoolFlag{Name: "ablation-single-pass", Usage: "RESEARCH ABLATION: one analysis call over the whole conversation instead of two steps; labelled in every output"},
	}
}

// ac3SettingsFromConfig reads stages.curate's AC3 keys.
func ac3SettingsFromConfig(cfg *config) (ac3Settings, error) {
	s := ac3Settings{gates: map[string]curate.Gate{}, memory: memoryOff}
	if cfg == nil || cfg.Stages.Curate == nil {
		return s, nil
	}
	var ac ac3Config
	known := map[string]any{
		"gated_reset": &ac.GatedReset, "reset": &ac.Reset, "rewrite": &ac.Rewrite, "augment": &ac.Augment,
		"adaptive": &ac.Adaptive, "memory": &ac.Memory, "constraints": &ac.Constraints, "classify": &ac.Classify,
		"analyzer_retries": &ac.AnalyzerRetries, "ablation": &ac.Ablation,
	}
	for k, node := range cfg.Stages.Curate.Extra {
		dst, ok := known[k]
		if !ok {
			return s, fmt.Errorf("stages.curate.%s: unknown setting (known: gated_reset, reset, rewrite, augment, adaptive, memory, constraints, classify, analyzer_retries, ablation)", k)
		}
		if err := node.Decode(dst); err != nil {
			return s, fmt.Errorf("stages.curate.%s: %w", k, err)
		}
	}
	for op, g := range map[string]*gateConfig{curate.OpGatedReset: ac.GatedReset, curate.OpReset: ac.Reset, curate.OpRewrite: ac.Rewrite} {
		if g == nil {
			continue
		}
		gate := curate.DefaultGate(op)
		if g.Floor != nil {
			gate.Floor = *g.Floor
		}
		if g.Cap != nil {
			gate.Cap = *g.Cap
		}
		s.gates[op] = gate
	}
	if ac.Augment != nil && ac.Augment.Warmup != nil {
		s.gates[curate.OpAugment] = curate.Gate{Floor: *ac.Augment.Warmup}
	}
	if a := ac.Adaptive; a != nil {
		s.adaptive.Policy = a.Policy
		if a.Lambda != nil {
			s.adaptive.Lambda = *a.Lambda
		}
		if a.Tau != nil {
			s.adaptive.Tau = *a.Tau
		}
	}
	if ac.Memory != nil && ac.Memory.Regime != "" {
		s.memory = ac.Memory.Regime
	}
	if ac.Constraints != nil {
		s.constraintsVariant = ac.Constraints.Variant
	}
	if ac.Classify != nil {
		s.classifyVariant = ac.Classify.Variant
	}
	s.retries = ac.AnalyzerRetries
	ab, err := analyze.ParseAblation(ac.Ablation)
	if err != nil {
		return s, fmt.Errorf("stages.curate.ablation: %w", err)
	}
	s.ablation = ab
	return s, s.validate()
}

// The memory regimes of the AC3 operators.
const (
	memoryOff     = "off"
	memoryOffline = "offline" // the frozen cheatsheet 'ac3 memory learn' stored
	memoryOnline  = "online"  // a cheatsheet updated after every conversation, in ingest order
)

func (s ac3Settings) validate() error {
	switch s.memory {
	case "", memoryOff, memoryOffline, memoryOnline:
	default:
		return fmt.Errorf("memory regime %q: valid: %s, %s, %s", s.memory, memoryOff, memoryOffline, memoryOnline)
	}
	return nil
}

// ac3SettingsFrom reads the config's settings, then the flags set on c.
func ac3SettingsFrom(c *cli.Context, cfg *config) (ac3Settings, error) {
	s, err := ac3SettingsFromConfig(cfg)
	if err != nil {
		return s, err
	}
	gate := func(op string) curate.Gate {
		if g, ok := s.gates[op]; ok {
			return g
		}
		return curate.DefaultGate(op)
	}
	if c.IsSet("warmup") {
		s.gates[curate.OpAugment] = curate.Gate{Floor: c.Int("warmup")}
	}
	if c.IsSet("floor") {
		g := gate(curate.OpGatedReset)
		g.Floor = c.Int("floor")
		s.gates[curate.OpGatedReset] = g
	}
	if c.IsSet("cap") {
		g := gate(curate.OpGatedReset)
		g.Cap = c.Int("cap")
		s.gates[curate.OpGatedReset] = g
	}
	if c.IsSet("adaptive-policy") {
		s.adaptive.Policy = c.String("adaptive-policy")
	}
	if c.IsSet("lambda") {
		s.adaptive.Lambda = c.Float64("lambda")
	}
	if c.IsSet("tau") {
		s.adaptive.Tau = c.Float64("tau")
	}
	if c.IsSet("memory") {
		s.memory = c.String("memory")
	}
	if c.IsSet("constraints-variant") {
		s.constraintsVariant = c.String("constraints-variant")
	}
	if c.IsSet("classify-variant") {
		s.classifyVariant = c.String("classify-variant")
	}
	switch {
	case c.Bool("ablation-contagious-extractor") && c.Bool("ablation-single-pass"):
		return s, errors.New("choose one of --ablation-contagious-extractor and --ablation-single-pass")
	case c.Bool("ablation-contagious-extractor"):
		s.ablation = analyze.AblationContagiousExtractor
	case c.Bool("ablation-single-pass"):
		s.ablation = analyze.AblationSinglePass
	}
	return s, s.validate()
}

// curateArgsFromConfig is what `ac3 run` passes to runCurate for a config's
// stages.curate section: the strategies and, for model-backed ones, the
// config's endpoints and AC3 settings.
func curateArgsFromConfig(cfg *config) (curateArgs, error) {
	cu := cfg.Stages.Curate
	a := curateArgs{strategies: strings.Join(cu.Strategies, ","), fromTurn: cu.FromTurn, encoding: cu.Encoding, workers: cfg.Run.Workers,
		llm: llmSettings{cfg: cfg, budgetUSD: cfg.Run.BudgetUSD}}
	var err error
	a.ac3, err = ac3SettingsFromConfig(cfg)
	return a, err
}

// stagePlan says what curateStage built.
type stagePlan struct {
	model    bool // some strategy calls the analyzer
	analyzer *analyze.Analyzer
	online   *curate.OnlineMemory // the online memory, when an operator uses it
}

// Meta keys where the AC3 commands store their results in the run.
const (
	metaPolicy        = "ac3.policy"         // the fitted adaptive policy (JSON)
	metaMemoryOffline = "ac3.memory.offline" // the frozen cheatsheet (JSON memoryRecord)
)

// memoryRecord is the frozen cheatsheet as stored by 'ac3 memory learn'.
type memoryRecord struct {
	Cheatsheet    string  `json:"cheatsheet"`
	Hash          string  `json:"hash"`
	Conversations int     `json:"conversations"` // the split: the first N conversations in ingest order
	LastSeq       int64   `json:"last_seq"`
	Analyzer      string  `json:"analyzer"`
	CostUSD       float64 `json:"cost_usd"`
}

// upstream picks the variant of stage to read: the one asked for, else llm,
// else heuristic, from the stage's current plan; ok is false when the stage
// has no plan in this run.
func upstream(plans map[string][]ledger.Variant, stage, want string) (curate.Upstream, bool) {
	vs := plans[stage]
	for _, pref := range []string{want, "llm", "heuristic"} {
		if pref == "" {
			continue
		}
		for _, v := range vs {
			if v.Name == pref {
				return curate.Upstream{Variant: v.Name, Version: v.Version}, true
			}
		}
		if want != "" {
			break
		}
	}
	return curate.Upstream{}, false
}

// curateStage builds the curate stage for a. Strategies whose inputs are
// missing (no endpoint, no constraints or classify stage in the run) are
// dropped with one line each; a nil stage means nothing is left to run. With
// dry set, no client is built (versions and counts only). l may be nil in a
// dry run of a run that does not exist yet.
func curateStage(ctx context.Context, e *env, l *ledger.Ledger, a *curateArgs, dry bool) (pipeline.Stage, stagePlan, error) {
	var plan stagePlan
	specs, err := curate.ParseList(a.strategies)
	if err != nil {
		return nil, plan, err
	}
	enc := a.encoding
	if enc == "" {
		enc = tokens.DefaultEncoding
	}
	counter, err := tokens.New(enc)
	if err != nil {
		return nil, plan, err
	}
	opts := curate.Options{Gates: a.ac3.gates, Adaptive: a.ac3.adaptive}
	skip := map[string]string{}
	var modelSpecs []string
	for _, sp := range specs {
		if curate.NeedsModel(sp.Name) {
			modelSpecs = append(modelSpecs, sp.String())
		}
	}
	if len(modelSpecs) > 0 {
		if a.client == nil && !dry {
			r, err := newLLM(ctx, e, l, a.llm, counter)
			switch {
			case errors.Is(err, ErrNoEndpoint):
				fmt.Fprintf(e.stdout, "curate: skipping %s: %v\n", strings.Join(modelSpecs, ", "), err)
				for _, n := range modelSpecs {
					skip[n] = "no endpoint"
				}
			case err != nil:
				return nil, plan, err
			default:
				a.client = r
			}
		}
		var client *llm.Client
		if a.client != nil {
			client = a.client.client
		}
		an, err := analyze.New(client, analyze.Options{Ablation: a.ac3.ablation, Retries: a.ac3.retries})
		if err != nil {
			return nil, plan, err
		}
		opts.Analyzer, plan.analyzer = an, an
		if a.ac3.ablation != analyze.NoAblation {
			fmt.Fprintf(e.stdout, "curate: %s — the analyzer is deliberately weakened for research; results are labelled as such\n", a.ac3.ablation.Label())
		}
	}
	plans := map[string][]ledger.Variant{}
	if l != nil {
		opts.Units = l
		if plans, err = l.Plans(ctx); err != nil {
			return nil, plan, err
		}
		if a.ac3.memory == memoryOffline {
			raw, ok, err := l.Meta(ctx, metaMemoryOffline)
			if err != nil {
				return nil, plan, err
			}
			if !ok {
				return nil, plan, errors.New("memory regime offline: this run has no learned cheatsheet; run 'ac3 memory learn' first")
			}
			var rec memoryRecord
			if err := json.Unmarshal([]byte(raw), &rec); err != nil {
				return nil, plan, fmt.Errorf("reading the stored cheatsheet: %w", err)
			}
			opts.Memory = curate.Memory{Cheatsheet: rec.Cheatsheet, Hash: rec.Hash}
		}
		if a.ac3.adaptive.Policy == curate.PolicyScored {
			raw, ok, err := l.Meta(ctx, metaPolicy)
			if err != nil {
				return nil, plan, err
			}
			if ok {
				if opts.Adaptive.Fitted, err = curate.DecodePolicy([]byte(raw)); err != nil {
					return nil, plan, err
				}
			}
		}
	}
	var ok bool
	if opts.Constraints, ok = upstream(plans, curate.ConstraintsStage, a.ac3.constraintsVariant); !ok {
		for _, sp := range specs {
			if sp.Constraints && skip[sp.String()] == "" {
				skip[sp.String()] = "no constraints stage"
				fmt.Fprintf(e.stdout, "curate: skipping %s: the constraints stage has not run in this run (run it first; the overlay reads its registry)\n", sp)
			}
		}
	}
	if opts.Classify, ok = upstream(plans, curate.ClassifyStage, a.ac3.classifyVariant); !ok && a.ac3.adaptive.Policy != curate.PolicyScored {
		for _, sp := range specs {
			if sp.Name == "adaptive" && skip[sp.String()] == "" {
				skip[sp.String()] = "no classify stage"
				fmt.Fprintf(e.stdout, "curate: skipping %s: policy %s needs the classify stage's turn types, which this run does not have (run classify first)\n", sp, curate.PolicyOmitOnNewAsk)
			}
		}
	}
	// The online memory's chain is stored in the run (l); a dry run without
	// a run only needs its version.
	var online *curate.OnlineMemory
	if a.ac3.memory == memoryOnline && opts.Analyzer != nil {
		var store curate.MetaStore
		if l != nil {
			store = l
		}
		online = curate.NewOnlineMemory(opts.Analyzer, store, a.fromTurn)
	}
	var strategies []curate.Strategy
	usesOnline := false
	for _, sp := range specs {
		if skip[sp.String()] != "" {
			continue
		}
		st, err := curate.OnlineByName(sp.String(), opts, online)
		if err != nil {
			return nil, plan, err
		}
		if curate.NeedsModel(sp.Name) {
			plan.model = true
		}
		usesOnline = usesOnline || curate.UsesOnlineMemory(st)
		strategies = append(strategies, st)
	}
	if len(strategies) == 0 {
		fmt.Fprintln(e.stdout, "curate: no strategy left to run")
		return nil, plan, nil
	}
	if usesOnline {
		plan.online = online
		return curate.NewOnlineStage(strategies, counter, online), plan, nil
	}
	return curate.NewStage(strategies, counter, a.fromTurn), plan, nil
}

// dryRunModelCalls counts the model calls the pending model-backed work
// would make at most (every turn analyzed, every rewrite firing; summaries
// once per reply), and prices them when a client is available.
func dryRunModelCalls(ctx context.Context, w io.Writer, l *ledger.Ledger, a curateArgs, plan stagePlan) error {
	from := max(a.fromTurn, curate.DefaultFrom)
	var turns, replies, promptTk, convs int64
	var after int64
	for {
		page, err := l.ConversationPage(ctx, after, 512)
		if err != nil {
			return err
		}
		if len(page) == 0 {
			break
		}
		for _, sc := range page {
			convs++
			for _, tr := range sc.Conv.Turns() {
				if tr.Index < from {
					continue
				}
				turns++
				if ct, ok := sc.Conv.ContextBefore(tr.Index); ok {
					for _, m := range ct {
						promptTk += int64(len(m.Content) / 4)
					}
				}
			}
			for _, m := range sc.Conv.Messages {
				if m.Role == "assistant" {
					replies++
				}
			}
		}
		after = page[len(page)-1].Seq
	}
	fmt.Fprintf(w, "   model calls at most: %d analysis calls (2 per analyzed turn, shared by every AC3 operator), %d rewrite calls, %d summary calls\n", 2*turns, turns, replies)
	if plan.online != nil {
		fmt.Fprintf(w, "   online memory %s: every turn analyzed, plus %d reflection and %d unify calls (one each per conversation, one conversation at a time)\n", plan.online.Chain().ID, convs, convs)
	}
	fmt.Fprintf(w, "   analysis prompts ≈ %d tokens in all (step 2 reads the whole context)\n", promptTk+turns*600)
	if a.client != nil {
		usd, err := a.client.client.EstimateCost(analyze.DefaultRole, int(promptTk+turns*600), int(2*turns*400))
		if err == nil {
			fmt.Fprintf(w, "   estimated analysis cost ≈ $%.2f (before cache hits)\n", usd)
		}
	}
	return nil
}
