package report

import (
	"context"
	"fmt"
	"math"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/curate/tally"
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

// GateRow is how often a strategy with a gate (reset, gated-reset,
// rewrite, adaptive; not augment, which acts on every turn) changed the
// context.
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
//
// Every number depends on the curated turns alone (tally.CostStats): the
// dollars price the answers the turns used at the configured price, so
// they are the same after any number of interruptions and in batch mode.
// What each pass paid, and how many answers came from the run's cache, is
// the spend table's (Cost). The dollars are NaN when UnpricedCalls are
// above 0: turns curated by an ac3 that kept only what each pass paid.
type AnalysisCostRow struct {
	Strategy             string `json:"strategy"`
	Turns                int    `json:"turns"`
	AnalyzedTurns        int    `json:"analyzed_turns"`
	AnalysisCalls        int    `json:"analysis_calls"`
	OperatorCalls        int    `json:"operator_calls"`
	PromptTokens         int    `json:"prompt_tokens"`
	CompletionTokens     int    `json:"completion_tokens"`
	AnalysisUSD          Num    `json:"analysis_usd"`
	OperatorUSD          Num    `json:"operator_usd"`
	UnpricedCalls        int    `json:"unpriced_calls"`
	PerAnalyzedTurnUSD   Num    `json:"per_analyzed_turn_usd"`
	PerAnalyzedTurnCalls Num    `json:"per_analyzed_turn_calls"`
}

// analysisCostPricing says what the analysis-cost dollars are, under the
// table in report.md and report.html.
const analysisCostPricing = "Dollars price the answers the curated turns used at the configured price of the model, whichever pass or mode (online or batch) paid for them, so they do not change with interruptions or batch mode; an answer that did not parse and was asked again counts both times, so calls, tokens and dollars here do change with such endpoint faults. What the run paid, and how often an answer came from its cache, is in the cost by role."

// tokAcc sums context tokens.
type tokAcc struct {
	n   int
	sum int64
}

func (a *tokAcc) add(tokens int) {
	a.n++
	a.sum += int64(tokens)
}

// curationFold folds the curated contexts of every curate variant with
// the curate package's tallies: overall, over analyzed turns and per round.
type curationFold struct {
	variants []ledger.Variant // the plan's order, the token table's order
	fc       *ledger.Variant
	fcTok    map[pageTurn]int // fc's context tokens on the turns of the page

	total  map[string]*tokAcc
	rounds map[string]map[int]*tokAcc
	vsFC   *tally.TokenTally
	// roundVsFC is TokensVsFC per round; gateRound the gate rates of the
	// analyzed turns per round.
	roundVsFC     map[int]*tally.TokenTally
	gates         *tally.GateTally
	gatesAnalyzed *tally.GateTally
	gateRound     map[int]*tally.GateTally
	resets        *tally.ResetTally
	costs         *tally.CostTally
}

func newCurationFold(plans map[string][]ledger.Variant) *curationFold {
	c := &curationFold{
		variants: plans[curate.StageName], fcTok: map[pageTurn]int{},
		total: map[string]*tokAcc{}, rounds: map[string]map[int]*tokAcc{},
		vsFC: tally.NewTokenTally(), roundVsFC: map[int]*tally.TokenTally{},
		gates: tally.NewGateTally(), gatesAnalyzed: tally.NewGateTally(), gateRound: map[int]*tally.GateTally{},
		resets: tally.NewResetTally(), costs: tally.NewCostTally(),
	}
	for i, v := range c.variants {
		if v.Name == "fc" {
			c.fc = &c.variants[i]
		}
	}
	return c
}

// page reads the curated contexts of one page, fc's first so every other
// strategy's turn can be compared with fc's tokens on the same turn.
func (c *curationFold) page(ctx context.Context, src Source, after, upto int64, types map[pageTurn]string, progress *progressLog, answers *pageAnswers) error {
	clear(c.fcTok)
	order := make([]ledger.Variant, 0, len(c.variants))
	if c.fc != nil {
		order = append(order, *c.fc)
	}
	for _, v := range c.variants {
		if c.fc == nil || v != *c.fc {
			order = append(order, v)
		}
	}
	for _, v := range order {
		isFC := c.fc != nil && v == *c.fc
		err := src.Units(ctx, curate.StageName, []ledger.Variant{v}, after, upto, func(u ledger.Unit) error {
			progress.add(curate.StageName, u)
			if u.Status != ledger.Done {
				return nil
			}
			ctxt, err := curated.DecodeContext(u.Output)
			if err != nil {
				return fmt.Errorf("reading curate unit %s: %w", u.Key, err)
			}
			// Group by the variant, which names the strategy with its
			// overlays (gated-reset+constraints), so two variants built
			// on one operator are never pooled.
			ctxt.Strategy = v.Name
			answers.addContext(u.ConvSeq, u.Turn, v.Name, ctxt.Parts)
			at := pageTurn{u.ConvSeq, u.Turn}
			if isFC {
				c.fcTok[at] = ctxt.Tokens
			}
			c.add(tally.Row{ConvID: u.ConvID, Turn: u.Turn, Context: ctxt, TurnType: types[at]}, c.fcTok[at])
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *curationFold) add(row tally.Row, fcTokens int) {
	s, k := row.Context.Strategy, row.Turn
	if c.total[s] == nil {
		c.total[s], c.rounds[s] = &tokAcc{}, map[int]*tokAcc{}
	}
	c.total[s].add(row.Context.Tokens)
	ra := c.rounds[s][k]
	if ra == nil {
		ra = &tokAcc{}
		c.rounds[s][k] = ra
	}
	ra.add(row.Context.Tokens)
	c.vsFC.Add(row, fcTokens)
	rt := c.roundVsFC[k]
	if rt == nil {
		rt = tally.NewTokenTally()
		c.roundVsFC[k] = rt
	}
	rt.Add(row, fcTokens)
	// augment acts on every analyzed turn: it has no gate, and a rate of
	// 100% would only crowd the chart.
	if row.Context.Info.Operator == curated.OpAugment {
		c.resets.Add(row)
		c.costs.Add(row)
		return
	}
	c.gates.Add(row)
	if row.Context.Info.Analyzed {
		c.gatesAnalyzed.Add(row)
		g := c.gateRound[k]
		if g == nil {
			g = tally.NewGateTally()
			c.gateRound[k] = g
		}
		g.Add(row)
	}
	c.resets.Add(row)
	c.costs.Add(row)
}

// fill writes the token, gate, reset and analysis-cost sections.
func (c *curationFold) fill(r *Report, level float64) {
	c.fillTokens(r)
	c.fillGates(r, level)
	for _, s := range c.resets.Stats() {
		row := ResetRow{Strategy: s.Strategy, Conversations: s.Conversations, WithReset: s.WithReset, Resets: s.Resets,
			MeanPerConv: ratio(int64(s.Resets), s.Conversations), Histogram: []ResetBin{}}
		for _, k := range sortedKeys(s.Histogram) {
			row.Histogram = append(row.Histogram, ResetBin{Resets: k, Conversations: s.Histogram[k]})
		}
		r.Resets = append(r.Resets, row)
	}
	for _, s := range c.costs.Stats() {
		row := AnalysisCostRow{Strategy: s.Strategy, Turns: s.Turns, AnalyzedTurns: s.AnalyzedTurns,
			AnalysisCalls: s.AnalysisCalls, OperatorCalls: s.OperatorCalls,
			PromptTokens: s.PromptTokens, CompletionTokens: s.CompletionTokens,
			AnalysisUSD: Num(s.AnalysisUSD), OperatorUSD: Num(s.OperatorUSD), UnpricedCalls: s.UnpricedCalls,
			PerAnalyzedTurnUSD: Num(math.NaN()), PerAnalyzedTurnCalls: Num(math.NaN())}
		if s.AnalyzedTurns > 0 {
			row.PerAnalyzedTurnUSD, row.PerAnalyzedTurnCalls = Num(s.PerAnalyzedTurnUSD), Num(s.PerAnalyzedTurnCalls)
		}
		if s.UnpricedCalls > 0 {
			// A sum that leaves calls out would be read as the cost.
			row.AnalysisUSD, row.OperatorUSD, row.PerAnalyzedTurnUSD = Num(math.NaN()), Num(math.NaN()), Num(math.NaN())
			r.Notes = append(r.Notes, fmt.Sprintf("analysis cost of %s: %d of its calls were recorded by an older ac3, which kept what each pass paid rather than the price of the answers; its dollars are left out (the spend table has what was paid; curating its turns again, from the cache, prices them)", s.Strategy, s.UnpricedCalls))
		}
		r.AnalysisCost = append(r.AnalysisCost, row)
	}
}

func byStrategy(ts []tally.TokenStats) map[string]tally.TokenStats {
	m := map[string]tally.TokenStats{}
	for _, s := range ts {
		m[s.Strategy] = s
	}
	return m
}

func (c *curationFold) fillTokens(r *Report) {
	overall := byStrategy(c.vsFC.Stats())
	roundVs := map[int]map[string]tally.TokenStats{}
	for k, t := range c.roundVsFC {
		roundVs[k] = byStrategy(t.Stats())
	}
	nan := Num(math.NaN())
	for _, v := range c.variants {
		t := c.total[v.Name]
		if t == nil {
			t = &tokAcc{}
		}
		row := TokenRow{Strategy: v.Name, N: t.n, Mean: ratio(t.sum, t.n), Total: t.sum, VsFC: nan, MeanVsFC: nan, ByRound: []RoundTok{}}
		if s, ok := overall[v.Name]; ok && s.Turns > 0 {
			row.TurnsVsFC, row.VsFC, row.MeanVsFC = s.Turns, Num(s.Ratio), Num(s.MeanRatio)
		}
		for _, k := range sortedKeys(c.rounds[v.Name]) {
			a := c.rounds[v.Name][k]
			rt := RoundTok{Round: k, N: a.n, Mean: ratio(a.sum, a.n), VsFC: nan}
			if s, ok := roundVs[k][v.Name]; ok && s.Turns > 0 {
				rt.VsFC = Num(s.Ratio)
			}
			row.ByRound = append(row.ByRound, rt)
		}
		r.Tokens = append(r.Tokens, row)
	}
}

func rate(c tally.GateCount, level float64) Rate {
	out := Rate{Turns: c.Turns, Open: c.Open, Rate: ratio(int64(c.Open), c.Turns)}
	out.Wilson = interval(stats.Wilson(float64(c.Open), c.Turns, level))
	return out
}

// fillGates reports the gate-open rates overall, then again over the
// analyzed turns alone, whole and per round, for the breakdowns.
func (c *curationFold) fillGates(r *Report, level float64) {
	typed := map[string]tally.GateRate{}
	var keys []string
	if an := c.gatesAnalyzed.Rates(); len(an) > 0 {
		keys = tally.TurnTypeKeys(an)
		for _, g := range an {
			typed[g.Strategy] = g
		}
	}
	rounds := map[int]map[string]tally.GateRate{}
	for k, t := range c.gateRound {
		rounds[k] = map[string]tally.GateRate{}
		for _, g := range t.Rates() {
			rounds[k][g.Strategy] = g
		}
	}
	for _, g := range c.gates.Rates() { // sorted by strategy
		row := GateRow{Strategy: g.Strategy, All: rate(g.All, level), Analyzed: rate(g.Analyzed, level), ByTurnType: []TypeGate{}, ByRound: []RoundGate{}}
		if tg, ok := typed[g.Strategy]; ok {
			for _, k := range keys {
				gc, ok := tg.ByType[k]
				if !ok {
					continue
				}
				if k == "" {
					k = Unclassified
				}
				row.ByTurnType = append(row.ByTurnType, TypeGate{Key: k, Rate: rate(gc, level)})
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
