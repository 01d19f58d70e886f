package report

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"sort"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
)

// Schema names the layout of report.json; it changes only when fields are
// renamed or removed.
//
// v3: analysis_cost prices the answers the curated turns used at the
// configured price (the same after any interruption and in batch mode) and
// has unpriced_calls instead of cached_calls, which depended on the passes.
const Schema = "ac3.report/v3"

// Source is what the report reads from a run; *ledger.Ledger satisfies it.
// The report pages through the run's conversations with EachPage and reads
// each stage's units of one page at a time with Units, so its memory does
// not grow with the run beyond what the numbers need (see Build).
type Source interface {
	Path() string
	Plans(ctx context.Context) (map[string][]ledger.Variant, error)
	EachPage(ctx context.Context, size int, fn func(page []ledger.Stored, after, upto int64) error) error
	Units(ctx context.Context, stage string, variants []ledger.Variant, after, upto int64, fn func(ledger.Unit) error) error
	Status(ctx context.Context) (ledger.Status, error)
}

// Options configure the statistics. Zero fields take pipeline/stats defaults.
type Options struct {
	Seed             uint64 // bootstrap seed (the run seed)
	Resamples        int
	Level            float64
	MinN             int
	MinConversations int
	// PageSize is how many conversations are read at a time (default
	// 512). It changes memory and the number of queries, never a number.
	PageSize int
	// CompIntMinDenominator is the |c_ub − c_lctx| below which CompInt's
	// effect retention is left undefined (compint.DefaultMinDenominator
	// when 0).
	CompIntMinDenominator float64
	// ViewBase is where report.html's links into 'ac3 view' point
	// (DefaultViewBase when empty). It changes links, never a number.
	ViewBase string
}

func (o Options) stats() stats.Options {
	return stats.Options{Level: o.Level, Resamples: o.Resamples, Seed: o.Seed, MinN: o.MinN, MinConversations: o.MinConversations}
}

// Report is everything the report shows. Its JSON form is report.json.
type Report struct {
	Schema        string            `json:"schema"`
	Run           string            `json:"run"` // the run file's name
	Settings      Settings          `json:"settings"`
	Conversations int64             `json:"conversations"`
	Progress      []Progress        `json:"progress"` // per planned stage variant: done, failed by reason, never attempted
	Judge         JudgeInfo         `json:"judge"`
	Pairs         []PairReport      `json:"pairs"`
	Arms          []ArmRow          `json:"arms"` // McNemar between arms judged against a common reference
	Respond       []RespondRow      `json:"respond"`
	Tokens        []TokenRow        `json:"tokens"`
	Gates         []GateRow         `json:"gates,omitempty"`         // strategies that record per-turn decisions
	Resets        []ResetRow        `json:"resets,omitempty"`        // strategies that remove history
	AnalysisCost  []AnalysisCostRow `json:"analysis_cost,omitempty"` // strategies that call a model
	Cost          Cost              `json:"cost"`
	Annotations   *Annotations      `json:"annotations,omitempty"`
	// ReplyPollution is set when the run reviewed generated replies for
	// pollution (stages.pollution.on: generated).
	ReplyPollution *ReplyPollution `json:"reply_pollution,omitempty"`
	// MemorySplit is the offline memory's learning split (learned.go).
	MemorySplit *MemorySplit `json:"memory_split,omitempty"`
	// Policy is the adaptive policy fitted on this run (learned.go).
	Policy  *AdaptivePolicy `json:"adaptive_policy,omitempty"`
	CompInt *CompInt        `json:"compint,omitempty"`
	Notes   []string        `json:"notes"`

	view viewLinks // where the HTML links into 'ac3 view'
}

// Settings says how the numbers were computed.
type Settings struct {
	Level            Num    `json:"level"`
	Interval         string `json:"interval"`
	Resamples        int    `json:"resamples"`
	Seed             uint64 `json:"seed"`
	Reference        string `json:"reference_interval"`
	Test             string `json:"test"`
	WinRate          string `json:"win_rate"`
	LengthControl    string `json:"length_control"`
	ArmTest          string `json:"arm_test"`
	MinN             int    `json:"min_n"`
	MinConversations int    `json:"min_conversations"`
}

// JudgeInfo lists what produced the verdicts.
type JudgeInfo struct {
	Prompts   []string `json:"prompts"`
	Models    []string `json:"models"`
	Endpoints []string `json:"endpoints"`
	Orders    []string `json:"orders"`
	Contexts  []string `json:"contexts"`
	Seeds     []int64  `json:"seeds"` // run seeds the random orders were drawn from
}

// PairReport is one judged pair (one judge variant).
type PairReport struct {
	Pair        string `json:"pair"`
	A           string `json:"a"`
	B           string `json:"b"`
	Context     string `json:"context"`
	Order       string `json:"order"`
	UnitsDone   int    `json:"units_done"`
	UnitsFailed int    `json:"units_failed"`
	Comparisons int    `json:"comparisons"`
	Identical   int    `json:"identical"` // ties without a call
	// SameContext counts comparisons where both strategies built the same
	// context for the turn (equal curated parts); SameContextNoCall those
	// of them settled as ties without a call because the answers were
	// identical too.
	SameContext       int         `json:"same_context"`
	SameContextNoCall int         `json:"same_context_no_call"`
	Dimensions        []DimReport `json:"dimensions"`
}

// DimReport is one pair on one dimension.
type DimReport struct {
	Dimension  string   `json:"dimension"`
	Overall    Summary  `json:"overall"`
	ByTurnType []Group  `json:"by_turn_type"`
	ByRound    []Group  `json:"by_round"`
	Position   Position `json:"position"`
	// LengthControlled is A's win rate at equal answer lengths.
	LengthControlled *LengthControlled `json:"length_controlled"`
	// Examples are a few verdicts with the judge's reasoning, chosen by a
	// hash of the report seed and their ids (see exampleFold).
	Examples []Example `json:"examples"`
}

// Summary is a stats.Summary for strategy A in report form.
type Summary struct {
	N             int      `json:"n"`
	Wins          int      `json:"wins"`
	Losses        int      `json:"losses"`
	Ties          int      `json:"ties"`
	Invalid       int      `json:"invalid"`
	Conversations int      `json:"conversations"`
	WinRate       Num      `json:"win_rate"`
	CI            Interval `json:"ci"`
	Wilson        Interval `json:"wilson"`
	SignTest      Test     `json:"sign_test"`
	SmallN        bool     `json:"small_n"`
	FewConvs      bool     `json:"few_conversations"`
	Warning       string   `json:"warning,omitempty"`
}

// Interval is a confidence interval.
type Interval struct {
	Lo Num `json:"lo"`
	Hi Num `json:"hi"`
}

// Test is an exact test result.
type Test struct {
	Name string `json:"name"`
	K    int    `json:"k"` // successes (A's wins, first-shown wins, ...)
	N    int    `json:"n"` // decisive comparisons
	P    Num    `json:"p"`
}

// Group is one slice of a breakdown.
type Group struct {
	Key string `json:"key"` // turn type ("unclassified" when none) or round number
	Summary
}

// Position holds the position-bias diagnostics of one pair and dimension.
type Position struct {
	FirstShown  *Bias        `json:"first_shown"`           // share of decisive verdicts won by the response shown first
	Consistency *Consistency `json:"consistency,omitempty"` // order both only
}

// Bias is stats.PositionBias in report form.
type Bias struct {
	Known      int      `json:"known"`
	Ties       int      `json:"ties"`
	Decisive   int      `json:"decisive"`
	FirstWins  int      `json:"first_wins"`
	FirstShare Num      `json:"first_share"`
	Wilson     Interval `json:"wilson"`
	SignTest   Test     `json:"sign_test"`
	SmallN     bool     `json:"small_n"`
	Warning    string   `json:"warning,omitempty"`
}

// Consistency is stats.Consistency in report form.
type Consistency struct {
	Pairs      int      `json:"pairs"`
	Invalid    int      `json:"invalid"`
	Consistent int      `json:"consistent"`
	Rate       Num      `json:"rate"`
	Wilson     Interval `json:"wilson"`
	FirstBoth  int      `json:"first_both"`  // flips won by the first position both times
	SecondBoth int      `json:"second_both"` // flips won by the second position both times
}

// RespondRow summarizes one respond variant.
type RespondRow struct {
	Variant         string   `json:"variant"`
	UnitsDone       int      `json:"units_done"`
	UnitsFailed     int      `json:"units_failed"`
	Samples         int      `json:"samples"`
	MeanCompletion  Num      `json:"mean_completion_tokens"`
	WithReasoning   int      `json:"samples_with_reasoning"`
	Models          []string `json:"models"`
	Endpoints       []string `json:"endpoints"`
	MeanContextToks Num      `json:"mean_context_tokens"`
}

// spendNote heads the spend table in report.md and report.html.
const spendNote = "What the run sent and paid, from its call records: these numbers change with interruptions (answers in flight at a kill are asked again), endpoint faults (retries) and batch mode (half price, answers imported into the cache); the other tables depend only on the results recorded in the run."

// Cost sums the run's model calls: what was sent and paid, which depends
// on interruptions, faults and batch mode (see spendNote).
type Cost struct {
	ByRole   []RoleCost `json:"by_role"`
	TotalUSD Num        `json:"total_usd"`
}

// RoleCost is one role's calls.
type RoleCost struct {
	Role             string `json:"role"`
	Calls            int64  `json:"calls"`
	CacheHits        int64  `json:"cache_hits"`
	Failed           int64  `json:"failed"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	// SentPromptTokens are the prompt tokens of the calls sent to an
	// endpoint (not cache hits); EndpointCachedTokens the part of them the
	// endpoint's prompt cache served, billed at the model's cached price.
	SentPromptTokens     int64    `json:"sent_prompt_tokens"`
	EndpointCachedTokens int64    `json:"endpoint_cached_tokens"`
	CostUSD              Num      `json:"cost_usd"`
	Models               []string `json:"models"`
	Stages               []string `json:"stages"`
}

// Build reads the run and computes the report. It pages through the run's
// conversations and reads every stage's units of one page before the next,
// so its memory is bounded by a page plus what the conversation bootstrap
// keeps per conversation (see the package documentation). It blocks until
// the run is read; cancelling ctx stops it with ctx's error. A stored unit
// that does not decode, or units that come out of conversation order, stop
// it with an error naming what was being read.
func Build(ctx context.Context, src Source, opts Options) (*Report, error) {
	so := opts.stats()
	def := stats.Summarize(nil, so) // resolves defaults
	r := &Report{
		Schema: Schema,
		Run:    filepath.Base(src.Path()),
		Settings: Settings{
			Level: Num(def.Level), Resamples: def.Resamples, Seed: opts.Seed,
			Interval:      "percentile bootstrap resampling whole conversations (turns of one conversation are correlated)",
			Reference:     "Wilson score interval (ties as half wins, ignoring clustering)",
			Test:          "exact two-sided sign test on decisive comparisons (ties dropped)",
			WinRate:       "(wins + ties/2) / n, for strategy A of the pair",
			LengthControl: "logistic model of the verdict (a tie half a win) on tanh of the difference in answer characters over its standard deviation, read at equal length (AlpacaEval 2's LC, without its per-instruction term); bootstrap over conversations",
			ArmTest:       "exact two-sided McNemar between two arms judged against the same reference on the same turns; an arm succeeds on a turn when it beat the reference (ties as losses)",
			MinN:          cmpOr(opts.MinN, stats.DefaultMinN), MinConversations: cmpOr(opts.MinConversations, stats.DefaultMinConversations),
		},
		Pairs: []PairReport{}, Arms: []ArmRow{}, Respond: []RespondRow{}, Tokens: []TokenRow{}, Notes: []string{}, Progress: []Progress{},
		Judge: JudgeInfo{Prompts: []string{}, Models: []string{}, Endpoints: []string{}, Orders: []string{}, Contexts: []string{}, Seeds: []int64{}},
		view:  newViewLinks(opts.ViewBase),
	}
	st, err := src.Status(ctx)
	if err != nil {
		return nil, err
	}
	r.Conversations = st.Conversations
	if r.MemorySplit, r.Policy, err = learned(ctx, src); err != nil {
		return nil, err
	}
	if s := r.MemorySplit; s != nil {
		if s.Excluded {
			r.Conversations = max(0, r.Conversations-int64(s.Conversations))
		}
		s.Evaluated = r.Conversations
		r.Notes = append(r.Notes, s.note())
	}
	plans, err := src.Plans(ctx)
	if err != nil {
		return nil, err
	}
	f := newFold(plans, so, def.Level)
	f.compint = newCompIntFold(plans, opts.CompIntMinDenominator)
	f.compint.watch(f.progress)
	err = src.EachPage(ctx, cmpOr(opts.PageSize, pageSize), r.MemorySplit.evalPages(func(_ []ledger.Stored, after, upto int64) error {
		return f.page(ctx, src, after, upto)
	}))
	if err != nil {
		return nil, err
	}
	if err := f.fill(r); err != nil {
		return nil, err
	}
	if r.Progress, err = stageProgress(ctx, src, st, f.progress); err != nil {
		return nil, err
	}
	r.addCost(st)
	if len(r.Pairs) == 0 {
		r.Notes = append(r.Notes, "no judge verdicts in this run yet: run respond and judge (or 'ac3 run' with stages.respond and stages.judge)")
	}
	r.Notes = append(r.Notes, progressNotes(r.Progress)...)
	return r, nil
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

const maxSeq = math.MaxInt64

// Unclassified names turns without a turn-type annotation in breakdowns.
const Unclassified = "unclassified"

func summary(s stats.Summary) Summary {
	return Summary{
		N: s.N, Wins: s.Wins, Losses: s.Losses, Ties: s.Ties, Invalid: s.Invalid, Conversations: s.Conversations,
		WinRate: Num(s.WinRate), CI: interval(s.Bootstrap), Wilson: interval(s.Wilson),
		SignTest: Test{Name: "exact two-sided sign test", K: s.Wins, N: s.Decisive(), P: Num(s.SignP)},
		SmallN:   s.SmallN, FewConvs: s.FewConversations, Warning: s.Warning,
	}
}

func interval(iv stats.Interval) Interval { return Interval{Num(iv.Lo), Num(iv.Hi)} }

func ratio(a int64, n int) Num {
	if n == 0 {
		return Num(math.NaN())
	}
	return Num(float64(a) / float64(n))
}

func (r *Report) addCost(st ledger.Status) {
	byRole := map[string]*RoleCost{}
	models, stages := map[string]set{}, map[string]set{}
	var total float64
	for _, u := range st.LLM {
		rc := byRole[u.Role]
		if rc == nil {
			rc = &RoleCost{Role: u.Role}
			byRole[u.Role] = rc
			models[u.Role], stages[u.Role] = set{}, set{}
		}
		rc.Calls += u.Calls
		rc.CacheHits += u.CacheHits
		rc.Failed += u.Failed
		rc.PromptTokens += u.PromptTokens
		rc.CompletionTokens += u.CompletionTokens
		rc.SentPromptTokens += u.SentPromptTokens
		rc.EndpointCachedTokens += u.SentCachedTokens
		rc.CostUSD += Num(u.CostUSD)
		total += u.CostUSD
		models[u.Role].add(u.Model)
		stages[u.Role].add(u.Stage)
	}
	r.Cost.ByRole = []RoleCost{}
	for _, k := range sortedKeys(byRole) {
		rc := byRole[k]
		rc.Models, rc.Stages = models[k].sorted(), stages[k].sorted()
		r.Cost.ByRole = append(r.Cost.ByRole, *rc)
	}
	r.Cost.TotalUSD = Num(total)
}

type set map[string]bool

func (s set) add(v string) {
	if v != "" {
		s[v] = true
	}
}

func (s set) sorted() []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedKeys[K int | string, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// pageTurn names one turn of a conversation of the page being read.
type pageTurn struct {
	seq  int64
	turn int
}
