package main

import (
	"errors"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/run"
	"github.com/ac3/ac3/pipeline/run/config"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate"
)

// curateHelp is curate's manual page.
const curateHelp = `For every kept conversation and every user turn t >= --from-turn, builds the
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
            hash is in the operators' versions. The conversations it was
            learned on are left out of the operators that use it (and of the
            report); --memory-include-learning keeps them
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
   ac3 curate --db run.db --strategies fc,gated-reset --memory online`

func curateCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "curate",
		Usage:       "build the context a respondent would see before each turn, per strategy",
		Description: curateHelp,
		Flags: append([]cli.Flag{
			dbFlag,
			&cli.StringFlag{Name: "strategies", Value: "fc,ao,lt,de", Usage: "comma-separated: " + strings.Join(curate.Names(), ", ") + "; with a model: " + strings.Join(curate.ModelNames(), ", ") + "; any NAME+constraints"},
			&cli.IntFlag{Name: "from-turn", Value: curate.DefaultFrom, Usage: "first user turn to curate (turn 1 has no history)"},
			&cli.StringFlag{Name: "encoding", Value: tokens.DefaultEncoding, Usage: "tokenizer encoding for token counts: " + strings.Join(tokens.Encodings(), ", ")},
			workersFlag(2, "conversations curated"),
			windowFlag(),
			&cli.BoolFlag{Name: "dry-run", Usage: "print what would be done, do nothing"},
		}, append(append(ac3Flags(), llmFlags()...), shardFlags()...)...),
		Action: func(c *cli.Context) error {
			cfg, m, err := modelFlags(c, e)
			if err != nil {
				return err
			}
			cu := run.Curate{Strategies: splitList([]string{c.String("strategies")}), FromTurn: c.Int("from-turn"), Encoding: c.String("encoding")}
			if cu.Workers, err = workersOf(c); err != nil {
				return err
			}
			if cu.Window, err = windowOf(c, cfg); err != nil {
				return err
			}
			if cu.AC3, err = cfg.AC3(); err != nil {
				return err
			}
			if err := ac3FromFlags(c, &cu.AC3); err != nil {
				return err
			}
			plan := run.Plan{DB: c.String("db"), Model: m, Curate: &cu}
			if c.Bool("dry-run") {
				return dryRun(c, e, plan, nil)
			}
			return execute(c, e, plan, runOptions(e))
		},
	}
}

func ac3Flags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "warmup", Usage: "augment: user turns before it starts appending the analysis (default 2)"},
		&cli.IntFlag{Name: "floor", Usage: "gated-reset: user turns it never resets at (default 2; the AC3 paper uses 1 on WildChat, LiC actions and tau2-bench)"},
		&cli.IntFlag{Name: "cap", Usage: "gated-reset: most resets per conversation (default 3)"},
		&cli.StringFlag{Name: "adaptive-policy", Usage: "adaptive: omit-on-new-ask (needs classify) | scored (needs 'ac3 policy fit')"},
		&cli.Float64Flag{Name: "lambda", Usage: "adaptive scored: cost weight λ on the relative assistant-history length (default 0)"},
		&cli.Float64Flag{Name: "tau", Usage: "adaptive scored: keep fc iff P(fc wins) − λ·Δ ≥ τ (default 0.5)"},
		&cli.StringFlag{Name: "memory", Usage: "AC3 memory given to step 2: off | offline (the cheatsheet 'ac3 memory learn' stored) | online (updated after each conversation, in ingest order; one worker)"},
		&cli.BoolFlag{Name: "memory-include-learning", Usage: "offline memory: also curate the conversations the cheatsheet was learned on (left out by default)"},
		&cli.StringFlag{Name: "constraints-variant", Usage: "+constraints: which constraints variant to read (default llm, else heuristic)"},
		&cli.StringFlag{Name: "classify-variant", Usage: "adaptive: which classify variant to read (default llm, else heuristic)"},
		&cli.StringFlag{Name: "ao-placeholder", Usage: "ao: the text standing in for each hidden reply (default " + strconv.Quote(curate.DefaultPlaceholder) + "; Huang et al.'s is " + strconv.Quote(curate.HuangPlaceholder) + ")"},
		&cli.StringFlag{Name: "ao-note", Usage: "ao: the system note explaining the placeholder (default ours, naming the placeholder)"},
		&cli.StringFlag{Name: "reset-template", Usage: "reset, gated-reset: ac3 (default: one summary message) | wildchat (issues in the system message, summary, short acknowledgment; the AC3 paper's WildChat form)"},
		&cli.StringFlag{Name: "rewrite-variant", Usage: "rewrite: ac3 (default: a briefing of prescribed content) | paper (form left to the model, returned in its own section)"},
		&cli.StringFlag{Name: "replay", Usage: "reset, gated-reset, rewrite: continue (default: later turns continue from a replacement) | prefix (each turn's logged prefix curated on its own)"},
		&cli.BoolFlag{Name: "ablation-contagious-extractor", Usage: "RESEARCH ABLATION: let AC3 step 1 see the assistant's turns (reproduces the contagion result); labelled in every output"},
		&cli.BoolFlag{Name: "ablation-single-pass", Usage: "RESEARCH ABLATION: one analysis call over the whole conversation instead of two steps; labelled in every output"},
	}
}

// ac3FromFlags lays the curate flags set on c over s.
func ac3FromFlags(c *cli.Context, s *run.AC3) error {
	gate := func(op string) curate.Gate {
		if g, ok := s.Gates[op]; ok {
			return g
		}
		return curate.DefaultGate(op)
	}
	if c.IsSet("warmup") {
		s.Gates[curate.OpAugment] = curate.Gate{Floor: c.Int("warmup")}
	}
	if c.IsSet("floor") || c.IsSet("cap") {
		g := gate(curate.OpGatedReset)
		if c.IsSet("floor") {
			g.Floor = c.Int("floor")
		}
		if c.IsSet("cap") {
			g.Cap = c.Int("cap")
		}
		s.Gates[curate.OpGatedReset] = g
	}
	if c.IsSet("adaptive-policy") {
		s.Adaptive.Policy = c.String("adaptive-policy")
	}
	if c.IsSet("lambda") {
		s.Adaptive.Lambda = c.Float64("lambda")
	}
	if c.IsSet("tau") {
		s.Adaptive.Tau = c.Float64("tau")
	}
	if c.IsSet("memory") {
		s.Memory = c.String("memory")
	}
	if c.IsSet("memory-include-learning") {
		s.IncludeLearning = c.Bool("memory-include-learning")
	}
	if c.IsSet("constraints-variant") {
		s.ConstraintsVariant = c.String("constraints-variant")
	}
	if c.IsSet("classify-variant") {
		s.ClassifyVariant = c.String("classify-variant")
	}
	if c.IsSet("ao-placeholder") {
		s.AO.Placeholder = c.String("ao-placeholder")
	}
	if c.IsSet("ao-note") {
		s.AO.Note = c.String("ao-note")
	}
	if c.IsSet("reset-template") {
		s.ResetTemplate = curate.ResetTemplate(c.String("reset-template"))
	}
	if c.IsSet("rewrite-variant") {
		s.Rewrite = analyze.RewriteVariant(c.String("rewrite-variant"))
	}
	if c.IsSet("replay") {
		s.Replay = curate.Replay(c.String("replay"))
	}
	switch {
	case c.Bool("ablation-contagious-extractor") && c.Bool("ablation-single-pass"):
		return errors.New("choose one of --ablation-contagious-extractor and --ablation-single-pass")
	case c.Bool("ablation-contagious-extractor"):
		s.Ablation = analyze.AblationContagiousExtractor
	case c.Bool("ablation-single-pass"):
		s.Ablation = analyze.AblationSinglePass
	}
	return config.CheckMemory(s.Memory)
}
