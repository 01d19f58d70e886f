package run

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText prints fc as the dry run shows it: what plan would do, a table
// of the work left per stage and its cost, then the skips and notes.
func (fc Forecast) WriteText(w io.Writer, plan Plan) {
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
	fmt.Fprintln(tw, "stage\ttasks pending\tdone\tmodel calls\tinput tokens\tcached\toutput tokens\tper call\tcost\t")
	for _, s := range fc.Stages {
		if s.Skipped != "" {
			fmt.Fprintf(tw, "%s\tskipped\t\t\t\t\t\t\t\t\n", s.Label)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\t%d\t$%.4f\t\n", s.Label, s.PendingTasks, s.DoneTasks, s.Calls, humanTokens(s.InputTokens), cachedShare(s.CachedTokens, s.InputTokens), humanTokens(s.OutputTokens), s.OutputTokensPerCall, s.CostUSD)
	}
	tw.Flush()
	for _, s := range fc.Stages {
		if s.Skipped != "" {
			fmt.Fprintf(w, "   %s skipped: %s\n", s.Label, s.Skipped)
		}
	}
	fmt.Fprintf(w, "total: %d model calls, estimated cost $%.4f (answers counted at the stage's expected length, capped at the role's max_tokens: see \"per call\")\n", fc.TotalCalls, fc.TotalCostUSD)
	if fc.TotalCachedTokens > 0 {
		fmt.Fprintf(w, "cached: %s of %s input tokens (%s) expected from the endpoints' prompt caches, priced at the models' cached price: the prefixes calls of one conversation share, where the stage can tell\n",
			humanTokens(fc.TotalCachedTokens), humanTokens(fc.TotalInputTokens), cachedShare(fc.TotalCachedTokens, fc.TotalInputTokens))
	}
	if line := fc.batchRoundsText(); line != "" {
		fmt.Fprintln(w, line)
	}
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

// cachedShare is cached as a percentage of input ("-" when there is no
// input).
func cachedShare(cached, input int64) string {
	if input <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(cached)/float64(input))
}
