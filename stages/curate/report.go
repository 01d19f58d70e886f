package curate

import (
	"slices"
	"sort"
)

// ReportRow is one stored curate unit as the report reads it: the decoded
// context and, when the classify stage ran, the turn's type.
type ReportRow struct {
	ConvID   string
	Turn     int
	Context  Context
	TurnType string // "new_ask", "feedback", "no_feedback"; "" when unknown
}

// GateCount is how often an operator acted on a set of turns.
type GateCount struct {
	Turns int     `json:"turns"`
	Open  int     `json:"open"`
	Rate  float64 `json:"rate"` // Open / Turns
}

// GateRate is one strategy's gate-open rate: overall, over analyzed turns
// only, and by turn type.
type GateRate struct {
	Strategy string `json:"strategy"`
	All      GateCount
	// Analyzed counts only turns the analyzer ran on (past the floor or
	// warm-up and under the cap), the rate the AC3 paper reports.
	Analyzed GateCount
	ByType   map[string]GateCount `json:"by_type"` // "" is unknown
}

func (g *GateCount) add(open bool) {
	g.Turns++
	if open {
		g.Open++
	}
	g.Rate = float64(g.Open) / float64(g.Turns)
}

// GateRates summarizes, per strategy that records decisions (AC3 operators,
// adaptive), how often it changed the context. Strategies come sorted by
// name.
func GateRates(rows []ReportRow) []GateRate {
	by := map[string]*GateRate{}
	for _, r := range rows {
		i := r.Context.Info
		if i.Operator == "" || i.Action == "" {
			continue
		}
		g := by[r.Context.Strategy]
		if g == nil {
			g = &GateRate{Strategy: r.Context.Strategy, ByType: map[string]GateCount{}}
			by[r.Context.Strategy] = g
		}
		g.All.add(i.GateOpen)
		if i.Analyzed {
			g.Analyzed.add(i.GateOpen)
		}
		tc := g.ByType[r.TurnType]
		tc.add(i.GateOpen)
		g.ByType[r.TurnType] = tc
	}
	out := make([]GateRate, 0, len(by))
	for _, g := range by {
		out = append(out, *g)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Strategy < out[b].Strategy })
	return out
}

// ResetStats is how often an operator that removes content (reset,
// gated-reset, rewrite) acted per conversation.
type ResetStats struct {
	Strategy      string  `json:"strategy"`
	Conversations int     `json:"conversations"`
	WithReset     int     `json:"with_reset"` // conversations with at least one reset
	Resets        int     `json:"resets"`
	MeanPerConv   float64 `json:"mean_per_conversation"`
	// Histogram maps resets per conversation to how many conversations had
	// that many.
	Histogram map[int]int `json:"histogram"`
}

// ResetCounts counts resets (rewrites for rewrite) per conversation from
// the last recorded Resets of each conversation, per strategy, sorted by
// name.
func ResetCounts(rows []ReportRow) []ResetStats {
	last := map[string]map[string]int{} // strategy -> conversation -> resets
	for _, r := range rows {
		switch r.Context.Info.Operator {
		case OpReset, OpGatedReset, OpRewrite:
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
	out := make([]ResetStats, 0, len(last))
	for name, m := range last {
		s := ResetStats{Strategy: name, Conversations: len(m), Histogram: map[int]int{}}
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

// TokenStats compares a strategy's context sizes with fc's on the same
// turns.
type TokenStats struct {
	Strategy string `json:"strategy"`
	Turns    int    `json:"turns"` // turns that both the strategy and fc curated
	Tokens   int64  `json:"tokens"`
	FCTokens int64  `json:"fc_tokens"`
	// Ratio is Tokens / FCTokens; MeanRatio the mean of per-turn ratios.
	Ratio     float64 `json:"ratio"`
	MeanRatio float64 `json:"mean_ratio"`
}

// TokensVsFC compares every strategy's context tokens with fc's on the
// turns both curated ("fc" itself included, at ratio 1). Without fc rows it
// returns nil. Strategies come sorted by name.
func TokensVsFC(rows []ReportRow) []TokenStats {
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
	by := map[string]*TokenStats{}
	sums := map[string]float64{}
	for _, r := range rows {
		f, ok := fc[key{r.ConvID, r.Turn}]
		if !ok || f == 0 {
			continue
		}
		s := by[r.Context.Strategy]
		if s == nil {
			s = &TokenStats{Strategy: r.Context.Strategy}
			by[r.Context.Strategy] = s
		}
		s.Turns++
		s.Tokens += int64(r.Context.Tokens)
		s.FCTokens += int64(f)
		sums[s.Strategy] += float64(r.Context.Tokens) / float64(f)
	}
	out := make([]TokenStats, 0, len(by))
	for name, s := range by {
		s.Ratio = float64(s.Tokens) / float64(s.FCTokens)
		s.MeanRatio = sums[name] / float64(s.Turns)
		out = append(out, *s)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Strategy < out[b].Strategy })
	return out
}

// CostStats is what a model-backed strategy's calls took.
type CostStats struct {
	Strategy         string  `json:"strategy"`
	Turns            int     `json:"turns"`
	AnalyzedTurns    int     `json:"analyzed_turns"`
	AnalysisCalls    int     `json:"analysis_calls"`
	OperatorCalls    int     `json:"operator_calls"`
	CachedCalls      int     `json:"cached_calls"`
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	AnalysisUSD      float64 `json:"analysis_usd"`
	OperatorUSD      float64 `json:"operator_usd"`
	// PerAnalyzedTurnUSD is AnalysisUSD / AnalyzedTurns. Every AC3 operator
	// records the one shared analysis of a turn, so compare it per strategy,
	// never sum it across strategies.
	PerAnalyzedTurnUSD float64 `json:"per_analyzed_turn_usd"`
	// PerAnalyzedTurnCalls is AnalysisCalls / AnalyzedTurns (2 for the
	// two-step analyzer when no answer needed a retry).
	PerAnalyzedTurnCalls float64 `json:"per_analyzed_turn_calls"`
}

// AnalysisCosts sums, per strategy that made calls, the analysis and
// operator calls and their cost, sorted by name. Calls answered from the
// cache count as calls at no cost (see CachedCalls).
func AnalysisCosts(rows []ReportRow) []CostStats {
	by := map[string]*CostStats{}
	for _, r := range rows {
		i := r.Context.Info
		if i.Operator == "" {
			continue
		}
		s := by[r.Context.Strategy]
		if s == nil {
			s = &CostStats{Strategy: r.Context.Strategy}
			by[r.Context.Strategy] = s
		}
		s.Turns++
		if i.Analyzed {
			s.AnalyzedTurns++
		}
		s.AnalysisCalls += i.AnalysisUsage.Calls
		s.OperatorCalls += i.OperatorUsage.Calls
		u := i.Usage()
		s.CachedCalls += u.Cached
		s.PromptTokens += u.PromptTokens
		s.CompletionTokens += u.CompletionTokens
		s.AnalysisUSD += i.AnalysisUsage.CostUSD
		s.OperatorUSD += i.OperatorUsage.CostUSD
	}
	out := make([]CostStats, 0, len(by))
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

// TurnTypeKeys lists the turn types present in rates, sorted, "" (unknown)
// last, for table columns.
func TurnTypeKeys(rates []GateRate) []string {
	set := map[string]bool{}
	for _, g := range rates {
		for k := range g.ByType {
			set[k] = true
		}
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		if k != "" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if set[""] {
		keys = append(keys, "")
	}
	return keys
}
