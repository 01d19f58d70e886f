package tally

import (
	"maps"
	"slices"

	"github.com/ac3/ac3/stages/curate/curated"
)

// Row is one stored curate unit as the report reads it: the decoded
// context and, when the classify stage ran, the turn's type. The report
// folds rows into the tallies below as it pages through a run, so no
// summary here needs every row at once.
type Row struct {
	ConvID   string
	Turn     int
	Context  curated.Context
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

// GateTally folds curated rows, one at a time, into gate-open rates per
// strategy that records decisions (AC3 operators, adaptive). Its memory
// grows with the number of strategies and turn types, not with the run.
// Use NewGateTally; the zero value is not ready.
type GateTally struct {
	by map[string]*GateRate
}

// NewGateTally returns an empty GateTally.
func NewGateTally() *GateTally { return &GateTally{by: map[string]*GateRate{}} }

// Add counts one row; rows without a recorded decision are skipped.
func (t *GateTally) Add(r Row) {
	i := r.Context.Info
	if i.Operator == "" || i.Action == "" {
		return
	}
	g := entry(t.by, r.Context.Strategy, func() *GateRate {
		return &GateRate{Strategy: r.Context.Strategy, ByType: map[string]GateCount{}}
	})
	g.All.add(i.GateOpen)
	if i.Analyzed {
		g.Analyzed.add(i.GateOpen)
	}
	tc := g.ByType[r.TurnType]
	tc.add(i.GateOpen)
	g.ByType[r.TurnType] = tc
}

// Rates returns the rates so far, sorted by strategy; later rows do not
// change them.
func (t *GateTally) Rates() []GateRate {
	return byStrategy(t.by, func(_ string, g *GateRate) GateRate {
		c := *g
		c.ByType = maps.Clone(g.ByType)
		return c
	})
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

// ResetTally folds curated rows of the operators that remove content
// (reset, gated-reset, rewrite) into resets per conversation, taking each
// conversation's largest recorded Resets (rewrites for rewrite). Add rows
// grouped by conversation for each strategy, as ledger.Units yields them:
// a strategy's conversation is closed when a row of another conversation
// of that strategy arrives, so only the open one is held. Use
// NewResetTally; the zero value is not ready.
type ResetTally struct {
	by map[string]*resetAcc
}

type resetAcc struct {
	ResetStats
	conv string // the open conversation
	cur  int    // its resets so far
	open bool
}

func (a *resetAcc) close(s *ResetStats) {
	if !a.open {
		return
	}
	s.Conversations++
	s.Resets += a.cur
	s.Histogram[a.cur]++
	if a.cur > 0 {
		s.WithReset++
	}
}

// NewResetTally returns an empty ResetTally.
func NewResetTally() *ResetTally { return &ResetTally{by: map[string]*resetAcc{}} }

// Add counts one row; rows of other operators are skipped.
func (t *ResetTally) Add(r Row) {
	switch r.Context.Info.Operator {
	case curated.OpReset, curated.OpGatedReset, curated.OpRewrite:
	default:
		return
	}
	a := entry(t.by, r.Context.Strategy, func() *resetAcc {
		return &resetAcc{ResetStats: ResetStats{Strategy: r.Context.Strategy, Histogram: map[int]int{}}}
	})
	if !a.open || a.conv != r.ConvID {
		a.close(&a.ResetStats)
		a.conv, a.cur, a.open = r.ConvID, 0, true
	}
	a.cur = max(a.cur, r.Context.Info.Resets)
}

// Stats returns the counts so far, the open conversations included, per
// strategy sorted by name; later rows do not change them.
func (t *ResetTally) Stats() []ResetStats {
	return byStrategy(t.by, func(_ string, a *resetAcc) ResetStats {
		s := a.ResetStats
		s.Histogram = maps.Clone(a.Histogram)
		a.close(&s)
		s.MeanPerConv = float64(s.Resets) / float64(s.Conversations)
		return s
	})
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

// TokenTally folds curated rows into each strategy's context tokens
// against fc's on the same turns ("fc" itself included, at ratio 1). The
// caller pairs each row with fc's tokens for that conversation and turn,
// which it finds among the rows of the same turn: nothing here looks
// across turns, so memory does not grow with the run. Use NewTokenTally;
// the zero value is not ready.
type TokenTally struct {
	by   map[string]*TokenStats
	sums map[string]float64
}

// NewTokenTally returns an empty TokenTally.
func NewTokenTally() *TokenTally {
	return &TokenTally{by: map[string]*TokenStats{}, sums: map[string]float64{}}
}

// Add counts row against fcTokens, fc's context tokens on the same turn;
// fcTokens 0 (fc did not curate the turn, or its context was empty) skips
// the row. Per-turn ratios are summed in the order rows are added.
func (t *TokenTally) Add(r Row, fcTokens int) {
	if fcTokens == 0 {
		return
	}
	s := entry(t.by, r.Context.Strategy, func() *TokenStats { return &TokenStats{Strategy: r.Context.Strategy} })
	s.Turns++
	s.Tokens += int64(r.Context.Tokens)
	s.FCTokens += int64(fcTokens)
	t.sums[s.Strategy] += float64(r.Context.Tokens) / float64(fcTokens)
}

// Stats returns the comparisons so far, sorted by strategy; nil when no row
// was paired with fc.
func (t *TokenTally) Stats() []TokenStats {
	if len(t.by) == 0 {
		return nil
	}
	return byStrategy(t.by, func(name string, s *TokenStats) TokenStats {
		c := *s
		c.Ratio = float64(c.Tokens) / float64(c.FCTokens)
		c.MeanRatio = t.sums[name] / float64(c.Turns)
		return c
	})
}

// CostStats is what a model-backed strategy's calls took. Calls and tokens
// count every answer the strategy's turns used, and the dollars price them
// at the configured price of the role's model (analyze.Usage.ListUSD), so
// every number depends on the curated turns alone: not on which pass paid
// for an answer, how many passes an interrupted run took, or batch mode.
// What was paid is the run's spend, counted from its call records.
type CostStats struct {
	Strategy         string  `json:"strategy"`
	Turns            int     `json:"turns"`
	AnalyzedTurns    int     `json:"analyzed_turns"`
	AnalysisCalls    int     `json:"analysis_calls"`
	OperatorCalls    int     `json:"operator_calls"`
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	AnalysisUSD      float64 `json:"analysis_usd"`
	OperatorUSD      float64 `json:"operator_usd"`
	// UnpricedCalls counts calls recorded by an ac3 that kept only what
	// each pass paid (before analyze.Usage.ListUSD): the dollars leave
	// them out, so they are not the strategy's cost when it is above 0.
	UnpricedCalls int `json:"unpriced_calls"`
	// PerAnalyzedTurnUSD is AnalysisUSD / AnalyzedTurns. Every AC3 operator
	// records the one shared analysis of a turn, so compare it per strategy,
	// never sum it across strategies.
	PerAnalyzedTurnUSD float64 `json:"per_analyzed_turn_usd"`
	// PerAnalyzedTurnCalls is AnalysisCalls / AnalyzedTurns (2 for the
	// two-step analyzer when no answer needed a retry).
	PerAnalyzedTurnCalls float64 `json:"per_analyzed_turn_calls"`
}

// CostTally folds curated rows into what each strategy that made calls
// took: analysis and operator calls, their tokens and their cost at the
// configured price (see CostStats). Costs are summed in the order rows are
// added. Use NewCostTally; the zero value is not ready.
type CostTally struct {
	by map[string]*CostStats
}

// NewCostTally returns an empty CostTally.
func NewCostTally() *CostTally { return &CostTally{by: map[string]*CostStats{}} }

// Add counts one row; rows of strategies without an operator are skipped.
func (t *CostTally) Add(r Row) {
	i := r.Context.Info
	if i.Operator == "" {
		return
	}
	s := entry(t.by, r.Context.Strategy, func() *CostStats { return &CostStats{Strategy: r.Context.Strategy} })
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
	s.UnpricedCalls += max(u.Calls-u.Listed, 0)
}

// Stats returns the sums so far, sorted by strategy.
func (t *CostTally) Stats() []CostStats {
	return byStrategy(t.by, func(_ string, p *CostStats) CostStats {
		s := *p
		if s.AnalyzedTurns > 0 {
			s.PerAnalyzedTurnUSD = s.AnalysisUSD / float64(s.AnalyzedTurns)
			s.PerAnalyzedTurnCalls = float64(s.AnalysisCalls) / float64(s.AnalyzedTurns)
		}
		return s
	})
}

// entry returns by[key], storing mk() there first when there is none: how
// every tally finds a strategy's accumulator.
func entry[A any](by map[string]*A, key string, mk func() *A) *A {
	a := by[key]
	if a == nil {
		a = mk()
		by[key] = a
	}
	return a
}

// byStrategy is how every tally hands out its numbers: one value per
// strategy, made by out from the strategy's name and accumulator, sorted
// by strategy (the key of by). The result is empty, not nil, when by is.
func byStrategy[A, S any](by map[string]*A, out func(name string, a *A) S) []S {
	res := make([]S, 0, len(by))
	for _, name := range slices.Sorted(maps.Keys(by)) {
		res = append(res, out(name, by[name]))
	}
	return res
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
