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
		Name:        "run",
		Usage:       "run the stages a config file lists, resumably",
		Description: config.Help(),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Required: true, Usage: "the run's config file"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the plan, the work left and its cost; change nothing"},
			&cli.BoolFlag{Name: "json", Usage: "with --dry-run, print the plan as JSON"},
			&cli.IntFlag{Name: "workers", Usage: fmt.Sprintf(workersUsage, "conversations handled") + " (default run.workers, else one per core)"},
			&cli.IntFlag{Name: "window", Usage: windowUsage + " (default run.window)"},
			&cli.BoolFlag{Name: "batch", Usage: "send every role's requests through the endpoints' batch API (half price, answers within 24h; see ac3 batch)"},
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
