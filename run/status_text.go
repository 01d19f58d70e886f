package run

import (
	"cmp"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/ac3/ac3/pipeline/ledger"
)

// WriteStatus prints where a run stands, as 'ac3 status' shows it: inputs,
// kept, dropped and quarantined counts, stages, model use and batches (aged
// against now), then the turn-type shares of each classify variant.
func WriteStatus(w io.Writer, st ledger.Status, tts []TurnTypes, now time.Time) {
	fmt.Fprintf(w, "run %s\n", st.Path)
	switch sh := st.Shard; {
	case sh == nil:
	case sh.Merged():
		fmt.Fprintf(w, "merged from %d shards (%s)\n", sh.Count, sh.Scheme)
	default:
		fmt.Fprintf(w, "shard %d/%d (%s): the conversations whose id hash falls in this shard; 'ac3 merge' joins the shards into one run\n", sh.Index, sh.Count, sh.Scheme)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "input\tformat\trecords\tstate")
	for _, in := range st.Inputs {
		state := "partly read"
		if in.Finished {
			state = "done"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", in.Path, in.Format, in.Records, state)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nconversations kept: %d\n", st.Conversations)
	writeLanguages(w, st.Languages)
	WriteCounts(w, "dropped by filters", st.Dropped, st.DroppedTotal)
	writeNearPairs(w, st)
	WriteCounts(w, "quarantined (bad records)", st.Quarantined, st.QuarantTotal)
	if len(st.Stages) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "stage\tvariant\tdone\tfailed\tpending\tunits done\tunits failed")
		for _, s := range st.Stages {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\n", s.Stage, s.Variant, s.Done, s.Failed, s.Pending, s.UnitsDone, s.UnitsFailed)
		}
		tw.Flush()
	}
	if len(st.LLM) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "role\tmodel\tstage\tcalls\tcache hits\tfailed\tprompt tok\tendpoint-cached\tcompletion tok\tcost")
		var sent, cached int64
		for _, u := range st.LLM {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d (%.0f%%)\t%d\t$%.4f\n", u.Role, u.Model, u.Stage, u.Calls, u.CacheHits, u.Failed, u.PromptTokens, u.SentCachedTokens, 100*u.CachedShare(), u.CompletionTokens, u.CostUSD)
			sent, cached = sent+u.SentPromptTokens, cached+u.SentCachedTokens
		}
		tw.Flush()
		fmt.Fprintf(w, "spend so far: $%.4f\n", st.SpendUSD)
		if cached > 0 {
			// Cache hits are the run's own answers; these are the provider's.
			fmt.Fprintf(w, "the endpoints' prompt caches served %d of the %d prompt tokens sent (%.0f%%), billed at the cached price\n", cached, sent, 100*float64(cached)/float64(sent))
		}
	}
	printBatches(w, st, now)
	printTurnTypes(w, tts)
}

// printBatches shows the run's batches by state, with request counts, the
// age of the oldest and the fallback their leftovers go to.
func printBatches(w io.Writer, st ledger.Status, now time.Time) {
	if len(st.Batches) == 0 && len(st.BatchRequests) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "batches\tendpoint status\tcount\trequests\tanswered\tfailed\timported\toldest\tleftovers")
	for _, g := range st.Batches {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s ago\t%s\n", g.State, cmp.Or(g.RemoteStatus, "-"), g.Batches, g.Requests, g.Completed, g.Failed, g.Imported,
			now.Sub(g.Oldest).Round(time.Second), cmp.Or(g.Fallback, "resubmit"))
	}
	tw.Flush()
	keys := make([]string, 0, len(st.BatchRequests))
	for k := range st.BatchRequests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprint(w, "batch requests:")
	for _, k := range keys {
		fmt.Fprintf(w, " %s %d", k, st.BatchRequests[k])
	}
	fmt.Fprintln(w)
}

// printTurnTypes prints each classify variant's turn-type shares; the
// heuristic's come with its measured coverage and accuracy beside them.
func printTurnTypes(w io.Writer, tts []TurnTypes) {
	for _, tt := range tts {
		fmt.Fprintf(w, "\nturn types (classify %s): %d turns labelled, %d failed\n", tt.Variant, tt.Turns, tt.Failed)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		q := tt.Quality
		if q != nil {
			fmt.Fprintln(tw, "type\tcount\tshare\tlabeller coverage\tlabeller accuracy")
		} else {
			fmt.Fprintln(tw, "type\tcount\tshare")
		}
		for _, s := range tt.Shares {
			if q != nil {
				fmt.Fprintf(tw, "%s\t%d\t%.1f%%\t%s\t%s\n", s.Type, s.Count, 100*s.Share, pctOf(q.Coverage), pctOf(q.Accuracy))
			} else {
				fmt.Fprintf(tw, "%s\t%d\t%.1f%%\n", s.Type, s.Count, 100*s.Share)
			}
		}
		tw.Flush()
		if q != nil {
			fmt.Fprintf(w, "heuristic labeller, measured: %s\n", q.Line)
		}
	}
}

func pctOf(f *float64) string {
	if f == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100**f)
}

// WriteCounts prints a title with its total, then each reason and its count
// in name order.
func WriteCounts(w io.Writer, title string, m map[string]int64, total int64) {
	fmt.Fprintf(w, "%s: %d\n", title, total)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %-28s %d\n", k, m[k])
	}
}
