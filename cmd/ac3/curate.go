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
			&cli.StringFlag{Name: "strategies", Value: "fc,ao,lt,de", Usage: "comma-separated: " + strings.Join(curate.Names(), ", ") + "; with a model: " + strings.Join(curate.ModelNames(), ", ") + "; compactors: " + strings.Join(curate.CompactorNames(), ", ") + "; any NAME+constraints"},
			&cli.IntFlag{Name: "from-turn", Value: curate.DefaultFrom, Usage: "first user turn to curate (turn 1 has no history)"},
			&cli.StringFlag{Name: "encoding", Value: tokens.DefaultEncoding, Usage: "tokenizer encoding for token counts: " + strings.Join(tokens.Encodings(), ", ")},
			workersFlag(2, "conversations curated"),
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
			ablation, err := ablationOf(c)
			if err != nil {
				return err
			}
			if cu.AC3, err = ac3Of(c, cfg, curateKeys, ablation); err != nil {
				return err
			}
			return stageCommand(c, e, run.Plan{DB: c.String("db"), Model: m, Curate: &cu})
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
		&cli.StringFlag{Name: "rewrite-variant", Usage: "rewrite: ac3 (default: a briefing of prescribed content) | paper (form left to the model, returned in its own section) | earlier (the paper's Prompt 3: numbered task specification and verified work)"},
		&cli.StringFlag{Name: "replay", Usage: "reset, gated-reset, rewrite: continue (default: later turns continue from a replacement) | prefix (each turn's logged prefix curated on its own)"},
		&cli.BoolFlag{Name: "ablation-contagious-extractor", Usage: "RESEARCH ABLATION: let AC3 step 1 see the assistant's turns (reproduces the contagion result); labelled in every output"},
		&cli.BoolFlag{Name: "ablation-single-pass", Usage: "RESEARCH ABLATION: one analysis call over the whole conversation instead of two steps; labelled in every output"},
	}
}

// curateKeys names the stages.curate key each curate flag sets: the flags
// reach run.AC3 through the config's own mapping (config.AC3WithFlags), so a
// flag and the file's key cannot drift apart.
var curateKeys = map[string]string{
	"warmup": "augment.warmup", "floor": "gated_reset.floor", "cap": "gated_reset.cap",
	"adaptive-policy": "adaptive.policy", "lambda": "adaptive.lambda", "tau": "adaptive.tau",
	"memory": "memory.regime", "memory-include-learning": "memory.include_learning",
	"constraints-variant": "constraints.variant", "classify-variant": "classify.variant",
	"ao-placeholder": "ao.placeholder", "ao-note": "ao.note",
	"reset-template": "reset_template", "rewrite-variant": "rewrite_variant", "replay": "replay",
}

// ablationOf reads the two --ablation-* flags as the key ablation.
func ablationOf(c *cli.Context) (map[string]any, error) {
	switch ce, sp := c.Bool("ablation-contagious-extractor"), c.Bool("ablation-single-pass"); {
	case ce && sp:
		return nil, errors.New("choose one of --ablation-contagious-extractor and --ablation-single-pass")
	case ce:
		return map[string]any{"ablation": string(analyze.AblationContagiousExtractor)}, nil
	case sp:
		return map[string]any{"ablation": string(analyze.AblationSinglePass)}, nil
	}
	return map[string]any{}, nil
}

// ac3Of is the AC3 settings of cfg (nil: none) with the flags of keys set
// on c, and settings, laid over its stages.curate.
func ac3Of(c *cli.Context, cfg *config.File, keys map[string]string, settings map[string]any) (run.AC3, error) {
	set := map[string]string{}
	for flag, key := range keys {
		if c.IsSet(flag) {
			settings[key], set[flag] = c.Value(flag), key
		}
	}
	return config.AC3WithFlags(cfg, settings, set)
}
