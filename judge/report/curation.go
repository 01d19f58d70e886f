package report

import (
	"context"
	"fmt"
	"math"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/stages/curate"
)

// TokenRow is one curate strategy's context size.
type TokenRow struct {
	Strategy string `json:"strategy"`
	N        int    `json:"n"`
	Mean     Num    `json:"mean"`
	Total    int64  `json:"total"`
	// VsFC is the strategy's tokens over fc's on the turns both curated
	// (TurnsVsFC of them), MeanVsFC the mean of the per-turn ratios; null
	// without fc.
	TurnsVsFC int        `json:"turns_vs_fc"`
	VsFC      Num        `json:"ratio_to_fc"`
	MeanVsFC  Num        `json:"mean_ratio_to_fc"`
	ByRound   []RoundTok `json:"by_round"`
}

// RoundTok is the context size of one round (user turn).
type RoundTok struct {
	Round int `json:"round"`
	N     int `json:"n"`
	Mean  Num `json:"mean"`
	VsFC  Num `json:"ratio_to_fc"`
}

// Rate is how often something happened out of Turns, with a Wilson
// interval at the report's level (null when Turns is 0).
type Rate struct {
	Turns  int      `json:"turns"`
	Open   int      `json:"open"`
	Rate   Num      `json:"rate"`
	Wilson Interval `json:"wilson"`
}

// GateRow is how often a strategy that decides per turn (AC3 operators,
// adaptive) changed the context.
type GateRow struct {
	Strategy string `json:"strategy"`
	// All counts every turn with a recorded decision; turns below the floor
	// (or in warm-up) and past the cap count as closed. Analyzed counts only
	// the turns the analyzer ran on, the rate the AC3 paper reports.
	All      Rate `json:"all"`
	Analyzed Rate `json:"analyzed"`
	// ByTurnType and ByRound split the analyzed turns.
	ByTurnType []TypeGate  `json:"by_turn_type"`
	ByRound    []RoundGate `json:"by_round"`
}

// TypeGate is the gate-open rate on analyzed turns of one turn type.
type TypeGate struct {
	Key string `json:"key"` // turn type, "unclassified" when classify did not label the turn
	Rate
}

// RoundGate is the gate-open rate on analyzed turns of one round.
type RoundGate struct {
	Round int `json:"round"`
	Rate
}

// ResetRow is how often a strategy that removes history (reset,
// gated-reset, rewrite) acted per conversation.
type ResetRow struct {
	Strategy      string     `json:"strategy"`
	Conversations int        `json:"conversations"`
	WithReset     int        `json:"with_reset"`
	Resets        int        `json:"resets"`
	MeanPerConv   Num        `json:"mean_per_conversation"`
	Histogram     []ResetBin `json:"histogram"`
}

// ResetBin is how many conversations had Resets resets.
type ResetBin struct {
	Resets        int `json:"resets"`
	Conversations int `json:"conversations"`
}

// AnalysisCostRow is what a model-backed strategy's own calls took. The
// analysis of a turn is shared by every AC3 operator of the run and each
// records it, so compare rows, never add them up.
type AnalysisCostRow struct {
	Strategy             string `json:"strategy"`
	Turns                int    `json:"turns"`
	AnalyzedTurns        int    `json:"analyzed_turns"`
	AnalysisCalls        int    `json:"analysis_calls"`
	OperatorCalls        int    `json:"operator_calls"`
	CachedCalls          int    `json:"cached_calls"`
	PromptTokens         int    `json:"prompt_tokens"`
	CompletionTokens     int    `json:"completion_tokens"`
	AnalysisUSD          Num    `json:"analysis_usd"`
	OperatorUSD          Num    `json:"operator_usd"`
	PerAnalyzedTurnUSD   Num    `json:"per_analyzed_turn_usd"`
	PerAnalyzedTurnCalls Num    `json:"per_analyzed_turn_calls"`
}

// readCurated decodes every stored context of the curate variants, with the
// turn type of its turn when classify labelled it.
func readCurated(ctx context.Context, src Source, variants []ledger.Variant, types map[turnKey]string) ([]curate.ReportRow, error) {
	var rows []curate.ReportRow
	for _, v := range variants {
		err := src.Units(ctx, curate.StageName, []ledger.Variant{v}, 0, maxSeq, func(u ledger.Unit) error {
			if u.Status != ledger.Done {
				return nil
			}
			c, err := curate.DecodeContext(u.Output)
			if err != nil {
				return fmt.Errorf("reading curate unit %s: %w", u.Key, err)
			}
			// Group by the variant, which names the strategy with its
			// overlays (gated-reset+constraints), so two variants built
			// on one operator are never pooled.
			c.Strategy = v.Name
			rows = append(rows, curate.ReportRow{ConvID: u.ConvID, Turn: u.Turn, Context: c, TurnType: types[turnKey{u.ConvID, u.Turn}]})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// addCuration fills the token, gate, reset and analysis-cost sections from
// the curated contexts, with the curate package's report helpers.
func (r *Report) addCuration(ctx context.Context, src Source, variants []ledger.Variant, types map[turnKey]string, level float64) error {
	rows, err := readCurated(ctx, src, variants, types)
	if err != nil {
		return err
	}
	r.addTokens(rows, variants)
	r.addGates(rows, level)
	for _, s := range curate.ResetCounts(rows) {
		row := ResetRow{Strategy: s.Strategy, Conversations: s.Conversations, WithReset: s.WithReset, Resets: s.Resets,
			MeanPerConv: ratio(int64(s.Resets), s.Conversations), Histogram: []ResetBin{}}
		for _, k := range sortedKeys(s.Histogram) {
			row.Histogram = append(row.Histogram, ResetBin{Resets: k, Conversations: s.Histogram[k]})
		}
		r.Resets = append(r.Resets, row)
	}
	for _, s := range curate.AnalysisCosts(rows) {
		row := AnalysisCostRow{Strategy: s.Strategy, Turns: s.Turns, AnalyzedTurns: s.AnalyzedTurns,
			AnalysisCalls: s.AnalysisCalls, OperatorCalls: s.OperatorCalls, CachedCalls: s.CachedCalls,
			PromptTokens: s.PromptTokens, CompletionTokens: s.CompletionTokens,
			AnalysisUSD: Num(s.AnalysisUSD), OperatorUSD: Num(s.OperatorUSD),
			PerAnalyzedTurnUSD: Num(math.NaN()), PerAnalyzedTurnCalls: Num(math.NaN())}
		if s.AnalyzedTurns > 0 {
			row.PerAnalyzedTurnUSD, row.PerAnalyzedTurnCalls = Num(s.PerAnalyzedTurnUSD), Num(s.PerAnalyzedTurnCalls)
		}
		r.AnalysisCost = append(r.AnalysisCost, row)
	}
	return nil
}

func (r *Report) addTokens(rows []curate.ReportRow, variants []ledger.Variant) {
	type acc struct {
		n   int
		sum int64
	}
	total := map[string]*acc{}
	rounds := map[string]map[int]*acc{}
	byRound := map[int][]curate.ReportRow{}
	for _, row := range rows {
		s := row.Context.Strategy
		if total[s] == nil {
			total[s], rounds[s] = &acc{}, map[int]*acc{}
		}
		a := rounds[s][row.Turn]
		if a == nil {
			a = &acc{}
			rounds[s][row.Turn] = a
		}
		for _, x := range []*acc{total[s], a} {
			x.n++
			x.sum += int64(row.Context.Tokens)
		}
		byRound[row.Turn] = append(byRound[row.Turn], row)
	}
	vsFC := func(rows []curate.ReportRow) map[string]curate.TokenStats {
		m := map[string]curate.TokenStats{}
		for _, s := range curate.TokensVsFC(rows) {
			m[s.Strategy] = s
		}
		return m
	}
	overall := vsFC(rows)
	roundVs := map[int]map[string]curate.TokenStats{}
	for k, rs := range byRound {
		roundVs[k] = vsFC(rs)
	}
	nan := Num(math.NaN())
	for _, v := range variants {
		t := total[v.Name]
		if t == nil {
			t = &acc{}
		}
		row := TokenRow{Strategy: v.Name, N: t.n, Mean: ratio(t.sum, t.n), Total: t.sum, VsFC: nan, MeanVsFC: nan, ByRound: []RoundTok{}}
		if s, ok := overall[v.Name]; ok && s.Turns > 0 {
			row.TurnsVsFC, row.VsFC, row.MeanVsFC = s.Turns, Num(s.Ratio), Num(s.MeanRatio)
		}
		for _, k := range sortedKeys(rounds[v.Name]) {
			a := rounds[v.Name][k]
			rt := RoundTok{Round: k, N: a.n, Mean: ratio(a.sum, a.n), VsFC: nan}
			if s, ok := roundVs[k][v.Name]; ok && s.Turns > 0 {
				rt.VsFC = Num(s.Ratio)
			}
			row.ByRound = append(row.ByRound, rt)
		}
		r.Tokens = append(r.Tokens, row)
	}
}

func rate(c curate.GateCount, level float64) Rate {
	out := Rate{Turns: c.Turns, Open: c.Open, Rate: ratio(int64(c.Open), c.Turns)}
	out.Wilson = interval(stats.Wilson(float64(c.Open), c.Turns, level))
	return out
}

// addGates reports curate.GateRates overall, then again over the analyzed
// turns alone, whole and per round, for the breakdowns.
func (r *Report) addGates(rows []curate.ReportRow, level float64) {
	var analyzed []curate.ReportRow
	byRound := map[int][]curate.ReportRow{}
	for _, row := range rows {
		if row.Context.Info.Analyzed {
			analyzed = append(analyzed, row)
			byRound[row.Turn] = append(byRound[row.Turn], row)
		}
	}
	typed := map[string]curate.GateRate{}
	var keys []string
	if an := curate.GateRates(analyzed); len(an) > 0 {
		keys = curate.TurnTypeKeys(an)
		for _, g := range an {
			typed[g.Strategy] = g
		}
	}
	rounds := map[int]map[string]curate.GateRate{}
	for k, rs := range byRound {
		rounds[k] = map[string]curate.GateRate{}
		for _, g := range curate.GateRates(rs) {
			rounds[k][g.Strategy] = g
		}
	}
	for _, g := range curate.GateRates(rows) { // sorted by strategy
		row := GateRow{Strategy: g.Strategy, All: rate(g.All, level), Analyzed: rate(g.Analyzed, level), ByTurnType: []TypeGate{}, ByRound: []RoundGate{}}
		if tg, ok := typed[g.Strategy]; ok {
			for _, k := range keys {
				c, ok := tg.ByType[k]
				if !ok {
					continue
				}
				if k == "" {
					k = Unclassified
				}
				row.ByTurnType = append(row.ByTurnType, TypeGate{Key: k, Rate: rate(c, level)})
			}
		}
		for _, k := range sortedKeys(rounds) {
			if rg, ok := rounds[k][g.Strategy]; ok {
				row.ByRound = append(row.ByRound, RoundGate{Round: k, Rate: rate(rg.All, level)})
			}
		}
		r.Gates = append(r.Gates, row)
	}
}
