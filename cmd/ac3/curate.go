package main

import (
	"errors"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/run/config"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate"
)

func curateCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "curate",
		Usage:       "build the context a respondent would see before each turn, per strategy",
		Description: curate.Help(),
		Flags: append([]cli.Flag{
			dbFlag(),
			&cli.StringFlag{Name: "strategies", Value: "fc,ao,lt,de", Usage: "comma-separated: " + strings.Join(curate.Names(), ", ") + "; with a model: " + strings.Join(curate.ModelNames(), ", ") + "; any NAME+constraints"},
			&cli.IntFlag{Name: "from-turn", Value: curate.DefaultFrom, Usage: "first user turn to curate (turn 1 has no history)"},
			&cli.StringFlag{Name: "encoding", Value: tokens.DefaultEncoding, Usage: "tokenizer encoding for token counts: " + strings.Join(tokens.Encodings(), ", ")},
			workersFlag(2, "conversations curated"),
			windowFlag(),
			&cli.BoolFlag{Name: "dry-run", Usage: "print what would be done, do nothing"},
			acceptFailedFlag,
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
