package stats

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Summary is everything the report says about one set of verdicts (one
// pair, one dimension, or one slice of a breakdown). Rates and intervals
// are for strategy A and are NaN when N == 0, so check N before printing or
// JSON-encoding them.
type Summary struct {
	Counts
	Conversations int     // distinct conversations with a valid verdict
	WinRate       float64 // (wins + ties/2) / n
	Level         float64 // confidence level of both intervals
	Bootstrap     Interval
	Resamples     int
	Seed          uint64
	Wilson        Interval // ties as half wins, n trials; ignores clustering
	SignP         float64  // exact two-sided sign test, wins vs losses

	SmallN           bool   // N < MinN
	FewConversations bool   // Conversations < MinConversations
	Warning          string // human-readable reasons; "" when none apply
}

// Summarize computes a Summary of vs under opt (defaults for zero fields).
func Summarize(vs []Verdict, opt Options) Summary {
	return SummarizeClusters(Tally(vs), clusters(vs), opt)
}

func warning(c Counts, convs int, opt Options) string {
	var ws []string
	switch {
	case c.N == 0:
		ws = append(ws, "no comparisons: nothing to estimate")
	case c.N < opt.MinN:
		ws = append(ws, fmt.Sprintf("small n: %d comparisons (fewer than %d); win rate and intervals are rough", c.N, opt.MinN))
	}
	if c.N > 0 && convs < opt.MinConversations {
		ws = append(ws, fmt.Sprintf("only %d conversations (fewer than %d); the conversation bootstrap understates the uncertainty", convs, opt.MinConversations))
	}
	if c.Invalid > 0 {
		ws = append(ws, fmt.Sprintf("%d verdicts without a valid outcome left out", c.Invalid))
	}
	return strings.Join(ws, "; ")
}

// Group is one slice of a breakdown with its own Summary.
type Group struct {
	TurnType string // set by ByTurnType ("" collects unclassified turns)
	Turn     int    // set by ByRound
	Summary
}

// ByTurnType summarizes the verdicts of each turn type separately, sorted by
// turn type. Each group is resampled with the same seed, so every group is
// reproducible on its own.
func ByTurnType(vs []Verdict, opt Options) []Group {
	return groupBy(vs, opt, func(v Verdict) string { return v.TurnType }, func(g *Group, k string) { g.TurnType = k })
}

// ByRound summarizes the verdicts of each round (Verdict.Turn) separately,
// in increasing round order, seeded as in ByTurnType.
func ByRound(vs []Verdict, opt Options) []Group {
	return groupBy(vs, opt, func(v Verdict) int { return v.Turn }, func(g *Group, k int) { g.Turn = k })
}

// groupBy splits vs by key, summarizes each part in increasing key order
// and lets label write the key into its Group: the breakdowns differ only
// in what they split on.
func groupBy[K cmp.Ordered](vs []Verdict, opt Options, key func(Verdict) K, label func(*Group, K)) []Group {
	parts := map[K][]Verdict{}
	for _, v := range vs {
		parts[key(v)] = append(parts[key(v)], v)
	}
	keys := slices.Sorted(maps.Keys(parts))
	gs := make([]Group, len(keys))
	for i, k := range keys {
		gs[i] = Group{Summary: Summarize(parts[k], opt)}
		label(&gs[i], k)
	}
	return gs
}
