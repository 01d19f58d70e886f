package tally_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"

	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/curate/tally"
)

// fold feeds rows, in the order given, to every tally. fc's tokens of a
// turn come from the rows of that turn, as the report pairs them.
func fold(rows []tally.Row) ([]tally.GateRate, []tally.ResetStats, []tally.TokenStats, []tally.CostStats) {
	g, r, tk, c := tally.NewGateTally(), tally.NewResetTally(), tally.NewTokenTally(), tally.NewCostTally()
	fc := map[[2]any]int{}
	for _, row := range rows {
		if row.Context.Strategy == "fc" {
			fc[[2]any{row.ConvID, row.Turn}] = row.Context.Tokens
		}
	}
	for _, row := range rows {
		g.Add(row)
		r.Add(row)
		tk.Add(row, fc[[2]any{row.ConvID, row.Turn}])
		c.Add(row)
	}
	return g.Rates(), r.Stats(), tk.Stats(), c.Stats()
}

func TestReportSummaries(t *testing.T) {
	row := func(conv string, turn int, strategy string, tokens int, info curated.Info, typ string) tally.Row {
		return tally.Row{ConvID: conv, Turn: turn, TurnType: typ, Context: curated.Context{Strategy: strategy, Turn: turn, Tokens: tokens, Info: info}}
	}
	// The analysis priced at 0.01 at the configured price, whatever this
	// pass paid: nothing for a cached answer (the first), all of it for a
	// paid one (the second).
	use := analyze.Usage{Calls: 2, Cached: 2, CostUSD: 0, ListUSD: 0.01, Listed: 2}
	paid := analyze.Usage{Calls: 2, CostUSD: 0.01, ListUSD: 0.01, Listed: 2}
	rows := []tally.Row{
		row("a", 2, "fc", 100, curated.Info{}, "new_ask"),
		row("a", 3, "fc", 200, curated.Info{}, "feedback"),
		row("b", 2, "fc", 100, curated.Info{}, "feedback"),
		row("a", 2, "gated-reset", 100, curated.Info{Operator: "gated-reset", Action: "floor"}, "new_ask"),
		row("a", 3, "gated-reset", 50, curated.Info{Operator: "gated-reset", Action: "reset", GateOpen: true, Resets: 1, Analyzed: true, AnalysisUsage: use}, "feedback"),
		row("b", 2, "gated-reset", 100, curated.Info{Operator: "gated-reset", Action: "pass", Analyzed: true, AnalysisUsage: paid}, "feedback"),
	}
	g, r, tk, c := fold(rows)
	if len(g) != 1 || g[0].All.Turns != 3 || g[0].All.Open != 1 || g[0].Analyzed.Turns != 2 || g[0].ByType["feedback"].Open != 1 || g[0].ByType["new_ask"].Turns != 1 {
		t.Errorf("gate rates = %+v", g)
	}
	if len(r) != 1 || r[0].Conversations != 2 || r[0].Resets != 1 || r[0].WithReset != 1 || r[0].Histogram[0] != 1 {
		t.Errorf("reset counts = %+v", r)
	}
	if len(tk) != 2 || tk[1].Strategy != "gated-reset" || tk[1].Ratio != 250.0/400 || tk[0].Ratio != 1 {
		t.Errorf("tokens vs fc = %+v", tk)
	}
	if len(c) != 1 || c[0].AnalyzedTurns != 2 || c[0].AnalysisCalls != 4 || c[0].PerAnalyzedTurnUSD != 0.01 || c[0].PerAnalyzedTurnCalls != 2 || c[0].UnpricedCalls != 0 {
		t.Errorf("analysis costs = %+v", c)
	}
	if keys := tally.TurnTypeKeys(g); len(keys) != 2 || keys[0] != "feedback" {
		t.Errorf("TurnTypeKeys = %v", keys)
	}
	if _, _, tk, _ := fold(rows[3:]); tk != nil {
		t.Errorf("without fc: %+v, want nil", tk)
	}
}

// A snapshot taken midway is not changed by later rows.
func TestReportTalliesSnapshot(t *testing.T) {
	g, r := tally.NewGateTally(), tally.NewResetTally()
	add := func(conv string, resets int, open bool) {
		row := tally.Row{ConvID: conv, TurnType: "feedback", Context: curated.Context{Strategy: "reset", Info: curated.Info{Operator: curated.OpReset, Action: "reset", GateOpen: open, Resets: resets}}}
		g.Add(row)
		r.Add(row)
	}
	add("a", 1, true)
	gm, rm := g.Rates(), r.Stats()
	add("a", 2, true)
	add("b", 0, false)
	if gm[0].All.Turns != 1 || gm[0].ByType["feedback"].Turns != 1 || rm[0].Conversations != 1 || rm[0].Resets != 1 || rm[0].Histogram[1] != 1 {
		t.Errorf("midway snapshots changed: %+v %+v", gm, rm)
	}
	if rs := r.Stats(); rs[0].Conversations != 2 || rs[0].Resets != 2 || rs[0].Histogram[2] != 1 || rs[0].Histogram[0] != 1 {
		t.Errorf("final reset counts %+v", rs)
	}
}

// randomRows draws curated rows in ledger order (by conversation, then
// turn, then strategy) from a fixed PCG: fc, ao and three operators, with
// decisions, resets that grow within a conversation, analysis costs and
// turns some strategies skipped.
func randomRows(seed uint64, convs int) []tally.Row {
	r := rand.New(rand.NewPCG(seed, 5))
	ops := map[string]string{"gated-reset": curated.OpGatedReset, "rewrite": curated.OpRewrite, "augment": curated.OpAugment}
	strategies := []string{"ao", "augment", "fc", "gated-reset", "rewrite"}
	var rows []tally.Row
	for range convs {
		id := fmt.Sprintf("conv-%x", r.Uint32())
		resets := map[string]int{}
		n := 1 + r.IntN(8)
		for turn := 2; turn < 2+n; turn++ {
			typ := []string{"", "new_ask", "feedback", "no_feedback"}[r.IntN(4)]
			for _, s := range strategies {
				if r.IntN(8) == 0 {
					continue // not curated (failed) for this strategy
				}
				ctx := curated.Context{Strategy: s, Turn: turn, Tokens: r.IntN(3000)}
				if op, ok := ops[s]; ok {
					open := r.IntN(3) == 0
					if open {
						resets[s]++
					}
					ctx.Info = curated.Info{Operator: op, Action: []string{"pass", "floor", "reset"}[r.IntN(3)], GateOpen: open, Resets: resets[s], Analyzed: r.IntN(2) == 0,
						AnalysisUsage: analyze.Usage{Calls: r.IntN(3), Cached: r.IntN(2), PromptTokens: r.IntN(500), CostUSD: float64(r.IntN(100)) * 1e-5, ListUSD: float64(r.IntN(100)) * 1e-5},
						OperatorUsage: analyze.Usage{Calls: r.IntN(2), CompletionTokens: r.IntN(90), CostUSD: float64(r.IntN(50)) * 1e-5, ListUSD: float64(r.IntN(50)) * 1e-5}}
					// Some rows were recorded before list prices were kept.
					if r.IntN(5) > 0 {
						ctx.Info.AnalysisUsage.Listed = ctx.Info.AnalysisUsage.Calls
						ctx.Info.OperatorUsage.Listed = ctx.Info.OperatorUsage.Calls
					}
				}
				rows = append(rows, tally.Row{ConvID: id, Turn: turn, TurnType: typ, Context: ctx})
			}
		}
	}
	return rows
}

// The tallies give what the whole-slice computations gave before the report
// streamed (kept below as the reference), floating-point sums included, when
// rows come in ledger order.
func TestReportTalliesMatchReference(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		rows := randomRows(seed, 200)
		g, r, tk, c := fold(rows)
		if want := refGateRates(rows); !reflect.DeepEqual(g, want) {
			t.Errorf("seed %d: gate rates %+v\nwant %+v", seed, g, want)
		}
		if want := refResetCounts(rows); !reflect.DeepEqual(r, want) {
			t.Errorf("seed %d: resets %+v\nwant %+v", seed, r, want)
		}
		if want := refTokensVsFC(rows); !reflect.DeepEqual(tk, want) {
			t.Errorf("seed %d: tokens %+v\nwant %+v", seed, tk, want)
		}
		if want := refAnalysisCosts(rows); !reflect.DeepEqual(c, want) {
			t.Errorf("seed %d: costs %+v\nwant %+v", seed, c, want)
		}
	}
}

func refGateRates(rows []tally.Row) []tally.GateRate {
	by := map[string]*tally.GateRate{}
	add := func(g *tally.GateCount, open bool) {
		g.Turns++
		if open {
			g.Open++
		}
		g.Rate = float64(g.Open) / float64(g.Turns)
	}
	for _, r := range rows {
		i := r.Context.Info
		if i.Operator == "" || i.Action == "" {
			continue
		}
		g := by[r.Context.Strategy]
		if g == nil {
			g = &tally.GateRate{Strategy: r.Context.Strategy, ByType: map[string]tally.GateCount{}}
			by[r.Context.Strategy] = g
		}
		add(&g.All, i.GateOpen)
		if i.Analyzed {
			add(&g.Analyzed, i.GateOpen)
		}
		tc := g.ByType[r.TurnType]
		add(&tc, i.GateOpen)
		g.ByType[r.TurnType] = tc
	}
	out := []tally.GateRate{}
	for _, g := range by {
		out = append(out, *g)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Strategy < out[b].Strategy })
	return out
}

func refResetCounts(rows []tally.Row) []tally.ResetStats {
	last := map[string]map[string]int{}
	for _, r := range rows {
		switch r.Context.Info.Operator {
		case curated.OpReset, curated.OpGatedReset, curated.OpRewrite:
		default:
			continue
		}
		m := last[r.Context.Strategy]
		if m == nil {
			m = map[string]int{}
			last[r.Context.Strategy] = m
		}
		m[r.ConvID] = max(m[r.ConvID], r.Context.Info.Resets)
	}
	out := []tally.ResetStats{}
	for name, m := range last {
		s := tally.ResetStats{Strategy: name, Conversations: len(m), Histogram: map[int]int{}}
		for _, n := range m {
			s.Resets += n
			s.Histogram[n]++
			if n > 0 {
				s.WithReset++
			}
		}
		s.MeanPerConv = float64(s.Resets) / float64(s.Conversations)
		out = append(out, s)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Strategy < out[b].Strategy })
	return out
}

func refTokensVsFC(rows []tally.Row) []tally.TokenStats {
	type key struct {
		conv string
		turn int
	}
	fc := map[key]int{}
	for _, r := range rows {
		if r.Context.Strategy == "fc" {
			fc[key{r.ConvID, r.Turn}] = r.Context.Tokens
		}
	}
	if len(fc) == 0 {
		return nil
	}
	by, sums := map[string]*tally.TokenStats{}, map[string]float64{}
	for _, r := range rows {
		f, ok := fc[key{r.ConvID, r.Turn}]
		if !ok || f == 0 {
			continue
		}
		s := by[r.Context.Strategy]
		if s == nil {
			s = &tally.TokenStats{Strategy: r.Context.Strategy}
			by[r.Context.Strategy] = s
		}
		s.Turns++
		s.Tokens += int64(r.Context.Tokens)
		s.FCTokens += int64(f)
		sums[s.Strategy] += float64(r.Context.Tokens) / float64(f)
	}
	out := []tally.TokenStats{}
	for name, s := range by {
		s.Ratio = float64(s.Tokens) / float64(s.FCTokens)
		s.MeanRatio = sums[name] / float64(s.Turns)
		out = append(out, *s)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Strategy < out[b].Strategy })
	return out
}

func refAnalysisCosts(rows []tally.Row) []tally.CostStats {
	by := map[string]*tally.CostStats{}
	for _, r := range rows {
		i := r.Context.Info
		if i.Operator == "" {
			continue
		}
		s := by[r.Context.Strategy]
		if s == nil {
			s = &tally.CostStats{Strategy: r.Context.Strategy}
			by[r.Context.Strategy] = s
		}
		s.Turns++
		if i.Analyzed {
			s.AnalyzedTurns++
		}
		s.AnalysisCalls += i.AnalysisUsage.Calls
		s.OperatorCalls += i.OperatorUsage.Calls
		u := i.Usage()
		s.PromptTokens += u.PromptTokens
		s.CompletionTokens += u.CompletionTokens
		s.AnalysisUSD += i.AnalysisUsage.ListUSD
		s.OperatorUSD += i.OperatorUsage.ListUSD
		s.UnpricedCalls += u.Calls - u.Listed
	}
	out := []tally.CostStats{}
	for _, s := range by {
		if s.AnalyzedTurns > 0 {
			s.PerAnalyzedTurnUSD = s.AnalysisUSD / float64(s.AnalyzedTurns)
			s.PerAnalyzedTurnCalls = float64(s.AnalysisCalls) / float64(s.AnalyzedTurns)
		}
		out = append(out, *s)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Strategy < out[b].Strategy })
	return out
}
