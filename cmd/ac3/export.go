package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/export"
	"github.com/ac3/ac3/pipeline/run"
)

func exportCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "export",
		Usage: "write conversations, curated contexts, the quarantine, or judged training pairs to Parquet or JSONL",
		Description: `--what conversations   the kept conversations in the canonical schema: id, source_file,
                       source_line, source_row, format, system, messages (a list of
                       {role, content} structs), language, toxic, redacted, meta (JSON text)
--what curated         one row per conversation, turn and strategy: conversation_id, turn,
                       strategy, version, messages (the curated context), tokens,
                       n_messages, target (the dataset's own next assistant message)
                       --format sft writes OpenAI chat fine-tuning JSONL instead:
                       {"messages": curated context + the dataset's own reply}
--what annotations     one row per conversation and user turn with its annotations:
                       conversation_id, turn, user_message, turn_type,
                       turn_type_confidence, turn_type_reason, refs, classify_annotator,
                       constraints_new, constraints_registry, constraints_annotator,
                       pollution_present, pollution_category, pollution_sources,
                       pollution_confidence, pollution_justification,
                       pollution_annotator (pollution of the assistant reply to the
                       turn; lists are JSON text; null where a stage did not run)
--what quarantine      every bad record: input, file, line, row, reason, detail, excerpt
--what preferences     one row per decisive judge verdict, in the shape TRL's DPOTrainer
                       reads: prompt (the curated context as messages), chosen and
                       rejected (one assistant message each), then provenance:
                       conversation_id, turn, sample, pair, dimension, chosen_strategy,
                       rejected_strategy, prompt_strategy, order, both_orders_agree,
                       judge_model, justification, confidence. Ties, identical answers
                       and verdicts the two orders disagreed on are left out (see
                       --include-inconsistent); --dimension picks the dimension
--what winners         SFT rows of the winning answers: messages (the curated context
                       the winner was generated from, then its answer, OpenAI chat
                       shape), conversation_id, turn, sample, strategy, prompt_strategy,
                       dimension, beat (strategies it won against); each answer once

Parquet files read directly in pandas, pyarrow, DuckDB and Hugging Face datasets.
JSONL is compressed when --out ends in .zst or .gz. Rows come in ingest order, so
an export of a resumed run is byte-identical to one of an uninterrupted run. The
file appears only when complete.

Examples:
   ac3 export --db run.db --what curated --format parquet --out curated.parquet
   ac3 export --db run.db --what conversations --format jsonl --out kept.jsonl.zst
   ac3 export --db run.db --what quarantine --format jsonl --out bad.jsonl
   ac3 export --db run.db --what annotations --format parquet --out annotations.parquet
   ac3 export --db run.db --what curated --format sft --out train.jsonl
   ac3 export --db run.db --what preferences --format jsonl --out dpo.jsonl
   ac3 export --db run.db --what winners --format jsonl --dimension on_topic --out sft.jsonl`,
		Flags: []cli.Flag{
			dbFlag,
			&cli.StringFlag{Name: "what", Required: true, Usage: strings.Join(export.Kinds(), " | ")},
			&cli.StringFlag{Name: "format", Value: string(export.Parquet), Usage: "parquet | jsonl | sft (curated only)"},
			&cli.StringFlag{Name: "out", Required: true, Usage: "output file"},
			&cli.StringFlag{Name: "dimension", Value: export.Dimensions()[0], Usage: "preferences, winners: " + strings.Join(export.Dimensions(), " | ")},
			&cli.BoolFlag{Name: "include-inconsistent", Usage: "preferences, winners: also export both-order verdicts where one order was decisive and the other a tie"},
			&cli.StringFlag{Name: "prompt-strategy", Usage: "preferences, winners: curate strategy whose context is the prompt (default: the one the chosen answer was generated from)"},
		},
		Action: func(c *cli.Context) error {
			po := export.PreferenceOptions{Dimension: c.String("dimension"), IncludeInconsistent: c.Bool("include-inconsistent"), PromptStrategy: c.String("prompt-strategy")}
			if !slices.Contains(export.Dimensions(), po.Dimension) {
				return fmt.Errorf("--dimension %q: want %s", po.Dimension, strings.Join(export.Dimensions(), ", "))
			}
			plan := run.Plan{DB: c.String("db"), Exports: []run.Export{{What: c.String("what"), Format: c.String("format"), Out: c.String("out"), Preferences: po}}}
			return execute(c, e, plan, runOptions(e))
		},
	}
}
