package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/run"
	"github.com/ac3/ac3/pipeline/run/config"
)

func runCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "run the stages a config file lists, resumably",
		Description: `Runs, in order, what the config file asks for: ingest (input.files with
input.filter), annotate (stages.classify, refs, constraints, pollution), curate
(stages.curate), respond, judge, the report, then each export. Run it again
after an interruption and it does only what is missing; run it on a finished
run and it does nothing and says so.

--dry-run changes nothing and calls nothing: it reads the run (and the input
files not ingested yet, through the same filters) conversation by
conversation and prints, per stage, the tasks still to do, the model calls,
input and output tokens (stating the answer length it assumed) and the cost at
the config's prices, with the skips the run would make. --json prints the same
as one JSON object with per-stage figures and total_calls, total_cost_usd.

Paper presets: fixtures/configs/ac3-wildchat.yaml, huang-wildchat.yaml and
ac3-lic.yaml follow the AC3 paper and Huang et al., every key commented with
its section. Generic defaults that differ from a paper: stages.curate
gated_reset.floor 2 (AC3 uses 1 on WildChat, LiC actions and tau2-bench), ao's
placeholder and note (ours; Huang et al.'s via stages.curate.ao),
reset_template ac3 (wildchat: the AC3 paper's WildChat form), rewrite_variant
ac3 (paper: the AC3 paper's later prompt), replay continue (prefix: each
logged prefix curated on its own, the papers' WildChat protocol); role
sampling is the endpoint's (AC3 uses temperature 1.0 everywhere). The README's
"Paper presets" section has the table.

Config sketch (YAML; ${VAR} and ${VAR:-default} are taken from the environment;
relative paths are relative to the config file):

   run:    {db: runs/demo.db, out: runs/demo/, workers: 2, window: 0}
   input:
     files: [../wildchat/*.jsonl]
     format: auto
     filter: {language: [English], user_turns: {min: 2, max: 10}, dedupe: true}
   endpoints:
     local: {base_url: "http://127.0.0.1:8000/v1", kind: vllm}
   models:
     qwen3-8b: {endpoint: local, output: json_schema}
   stages:
     curate: {from_turn: 2, strategies: [fc, ao, lt, de, concat, filler]}
     respond: {strategies: [fc, ao, filler]}
     # order: random (the default) judges each comparison once, A or B shown
     # first as drawn from run.seed, the protocol of both papers; both judges
     # twice and counts a win only when both orders agree (stricter; the
     # report then gives the order-consistency rate).
     judge: {pairs: [filler:fc, ao:fc], order: random}
   export:
     - {what: curated, format: parquet}
     - {what: quarantine, format: jsonl}

Two knobs say how much runs at once, and limit different things:
   run.workers (--workers)  CPU: conversations the rule-based stages (heuristic
                            annotators, model-free curation) handle at once;
                            one per core by default. It never limits model calls.
   run.window  (--window)   model calls: tasks a model-backed stage keeps open,
                            their requests in flight or queued at the endpoint's
                            limits; 0 (the default) derives it from those limits
                            (twice each endpoint's concurrency). The endpoint's
                            limits decide what is sent:
   endpoints.NAME.limits:   {concurrency: 16, min_concurrency: 4, rpm: 600,
                             tpm: 2000000, patience: 30m}
                            concurrency is the most requests in flight, which the
                            client lowers under overload but never below
                            min_concurrency (default a quarter of it); patience
                            is how long one request waits out 429s before its
                            unit fails (default 30m). models.NAME.limits
                            overrides them per model.

How model-backed stages ask for answers, per model (models.<name>.output,
else endpoints.<name>.output): tags (nonce-tagged sections; any server) or
json_schema (a strict JSON schema in response_format, enforced by the server).
Default by endpoints.<name>.kind: json_schema for openai, azure, vllm,
llamacpp, ollama; tags for openrouter, other, or no kind. The output is part
of each stage's version.

Examples:
   ac3 run --config fixtures/configs/wildchat.yaml
   ac3 run --config fixtures/configs/e2e.yaml --dry-run --json | jq .total_cost_usd`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Required: true, Usage: "the run's config file"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the plan, the work left and its cost; change nothing"},
			&cli.BoolFlag{Name: "json", Usage: "with --dry-run, print the plan as JSON"},
			&cli.IntFlag{Name: "workers", Usage: fmt.Sprintf(workersUsage, "conversations handled") + " (default run.workers, else one per core)"},
			&cli.IntFlag{Name: "window", Usage: windowUsage + " (default run.window)"},
			&cli.BoolFlag{Name: "batch", Usage: "send every role's requests through the endpoints' batch API (half price, answers within 24h; see ac3 batch)"},
			shardFlags()[0], shardFlags()[1],
		},
		Action: func(c *cli.Context) error {
			cfg, err := config.Load(c.String("config"), e.getenv)
			if err != nil {
				return err
			}
			if cfg.Run.Window, err = windowOf(c, cfg); err != nil {
				return err
			}
			if c.IsSet("workers") {
				if cfg.Run.Workers, err = workersOf(c); err != nil {
					return err
				}
			}
			plan, notes, err := cfg.Plan(e.getenv)
			if err != nil {
				return err
			}
			plan.Model = config.WithBatch(plan.Model, c.Bool("batch"))
			if plan, err = withShard(c, e, plan); err != nil {
				return err
			}
			if c.Bool("dry-run") {
				return dryRun(c, e, plan, notes)
			}
			for _, n := range notes {
				fmt.Fprintln(e.stdout, "annotate: "+n)
			}
			if cfg.Run.Out != "" {
				if err := os.MkdirAll(cfg.Run.Out, 0o755); err != nil {
					return fmt.Errorf("creating %s: %w", cfg.Run.Out, err)
				}
			}
			opts := runOptions(e)
			opts.Headings = true
			if err := execute(c, e, plan, opts); err != nil {
				return run.FilterError(err, config.FilterKeys)
			}
			fmt.Fprintf(e.stdout, "== done; 'ac3 status --db %s' shows the run\n", plan.DB)
			return nil
		},
	}
}

// dryRun prints the forecast of plan, as text or (--json) JSON.
func dryRun(c *cli.Context, e *env, plan run.Plan, notes []string) error {
	plan, err := withShard(c, e, plan)
	if err != nil {
		return err
	}
	fc, err := run.Estimate(c.Context, plan)
	if err != nil {
		return err
	}
	fc.Notes = append(notes, fc.Notes...)
	if c.Bool("json") {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(fc)
	}
	printForecast(e.stdout, plan, fc)
	return nil
}

func printForecast(w io.Writer, plan run.Plan, fc run.Forecast) {
	state := "new: nothing is recorded yet"
	if fc.RunExists {
		state = "exists: only the work not recorded is counted"
	}
	fmt.Fprintf(w, "plan for run %s (%s; nothing will be changed)\n", fc.DB, state)
	if in := plan.Ingest; in != nil {
		fmt.Fprintf(w, "ingest %d files with filters %s\n", len(in.Files), in.Filter.Canonical())
		for _, f := range fc.Inputs {
			fmt.Fprintf(w, "   %s (%.1f MB, %s)\n", f.Path, float64(f.Bytes)/1e6, f.State)
		}
	}
	if a := plan.Annotate; a != nil {
		fmt.Fprintf(w, "annotate (%s)\n", a.Describe())
	}
	if cu := plan.Curate; cu != nil {
		fmt.Fprintf(w, "curate strategies %s from turn %d\n", strings.Join(cu.Strategies, ","), max(cu.FromTurn, 2))
	}
	fmt.Fprintf(w, "over %d conversations:\n", fc.Conversations)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "stage\ttasks pending\tdone\tmodel calls\tinput tokens\toutput tokens\tper call\tcost\t")
	for _, s := range fc.Stages {
		if s.Skipped != "" {
			fmt.Fprintf(tw, "%s\tskipped\t\t\t\t\t\t\t\n", s.Label)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%d\t$%.4f\t\n", s.Label, s.PendingTasks, s.DoneTasks, s.Calls, humanTokens(s.InputTokens), humanTokens(s.OutputTokens), s.OutputTokensPerCall, s.CostUSD)
	}
	tw.Flush()
	for _, s := range fc.Stages {
		if s.Skipped != "" {
			fmt.Fprintf(w, "   %s skipped: %s\n", s.Label, s.Skipped)
		}
	}
	fmt.Fprintf(w, "total: %d model calls, estimated cost $%.4f (answers counted at the stage's expected length, capped at the role's max_tokens: see \"per call\")\n", fc.TotalCalls, fc.TotalCostUSD)
	if plan.Report != nil {
		fmt.Fprintf(w, "report to %s\n", plan.Report.Out)
	}
	for _, x := range fc.Exports {
		fmt.Fprintf(w, "export %s as %s to %s\n", x.What, x.Format, x.Out)
	}
	for _, n := range fc.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

func humanTokens(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
