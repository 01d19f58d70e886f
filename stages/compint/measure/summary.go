package measure

import (
	"cmp"
	"math"
	"slices"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/stages/compint"
)

// All marks a row that pools every location, framing or SC type.
const All = "all"

// Level is the confidence level of the report's intervals.
const Level = 0.95

// Summary is the CompInt section of a report.
type Summary struct {
	Instances int `json:"instances"` // instances with the SC whose long-context question was answered
	Baselines int `json:"baselines"` // instances without the SC (the no-SC baseline) answered
	Failed    int `json:"failed"`    // units that failed or could not be read
	// Contexts is how many stitched contexts the instances come from; the
	// intervals treat instances as independent, which they are not within
	// one context, so few contexts mean intervals that are too narrow.
	Contexts int `json:"contexts"`
	// Rows are per strategy: one row pooling everything, then one per
	// location × framing × SC type, strategies in name order (so a
	// "+constraints" variant follows its base strategy).
	Rows []Row `json:"rows"`
	// Pairs are exact McNemar tests between strategies on the same
	// instances, for retention and for compliance (the compacted group,
	// counted compliant only when every order asked was).
	Pairs []PairTest `json:"pairs"`
	// MinDenominator is the |c_ub − c_lctx| below which effect retention
	// is left undefined.
	MinDenominator float64 `json:"min_denominator"`
}

// Row is one cell of the CompInt table.
type Row struct {
	Strategy string `json:"strategy"`
	Location string `json:"location"`
	Framing  string `json:"framing"`
	SCType   string `json:"sc_type"`
	N        int    `json:"n"` // instances scored under this strategy
	// Retention is the judge's YES share; Evidence the share where the SC's
	// wording was found exactly or nearly.
	Retention compint.Rate `json:"retention"`
	Evidence  compint.Rate `json:"evidence"`
	// Compliance in the four groups over the same instances: the long
	// context with the SC, the no-SC baseline of each instance, the
	// strategy's context, and the upper bound: a strategy's context (of
	// the baseline by default, Options.UpperBound) with the SC restated.
	LongWithSC compint.Rate   `json:"long_with_sc"`
	LongNoSC   compint.Rate   `json:"long_no_sc"`
	Compacted  compint.Rate   `json:"compacted"`
	UpperBound compint.Rate   `json:"upper_bound"`
	Effect     compint.Effect `json:"effect_retention"`
}

// PairTest compares two strategies on the instances both were scored on.
type PairTest struct {
	A       string `json:"a"`
	B       string `json:"b"`
	Measure string `json:"measure"` // "retention" or "compliance"
	N       int    `json:"n"`       // instances with both
	// AOnly and BOnly are the discordant instances: A succeeded and B did
	// not, and the reverse.
	AOnly int     `json:"a_only"`
	BOnly int     `json:"b_only"`
	P     float64 `json:"p"` // exact McNemar, two-sided
}

// cellKey names a Row.
type cellKey struct{ strategy, location, framing, scType string }

type cell struct {
	n                  int
	retained, evidence float64
	longSC, comp, ub   float64
	baselines          map[string]int // baseline id → instances of this cell that use it
}

type pairKey struct{ a, b, measure string }

type pairCount struct{ n, aOnly, bOnly int }

// strategyOutcome is one strategy's result on the instance being read.
type strategyOutcome struct {
	retained, compliant bool
}

// Summarizer folds the stage's units into a Summary. Add units grouped by
// conversation, as ledger.Units yields them. Memory grows with the number
// of cells and of no-SC baselines (contexts × SCs), never with the units
// read. Use NewSummarizer; the zero value is not ready.
type Summarizer struct {
	s        Summary
	minDen   float64
	cells    map[cellKey]*cell
	base     map[string]float64 // baseline instance → its long-context score
	pairs    map[pairKey]*pairCount
	contexts map[string]bool

	// The instance being read.
	cur  string
	long *Output
	outs []Output
}

// NewSummarizer returns an empty Summarizer that leaves effect retention
// undefined when |c_ub − c_lctx| < minDen (compint.DefaultMinDenominator
// when minDen is 0 or less).
func NewSummarizer(minDen float64) *Summarizer {
	if minDen <= 0 {
		minDen = compint.DefaultMinDenominator
	}
	return &Summarizer{minDen: minDen, cells: map[cellKey]*cell{}, base: map[string]float64{},
		pairs: map[pairKey]*pairCount{}, contexts: map[string]bool{}}
}

// Add folds one unit of the stage.
func (z *Summarizer) Add(u ledger.Unit) {
	if u.ConvID != z.cur {
		z.close()
		z.cur = u.ConvID
	}
	if u.Status != ledger.Done {
		z.s.Failed++
		return
	}
	o, err := Decode(u.Output)
	if err != nil {
		z.s.Failed++
		return
	}
	z.contexts[o.BaseID] = true
	if o.Strategy == "" {
		if o.Kind == compint.WithoutSC {
			if g, ok := group(o, compint.LongNoSC); ok {
				z.base[o.Instance] = g.Score
				z.s.Baselines++
			}
			return
		}
		z.long = &o
		return
	}
	z.outs = append(z.outs, o)
}

// close folds the instance just read.
func (z *Summarizer) close() {
	defer func() { z.long, z.outs = nil, z.outs[:0] }()
	if z.long == nil {
		// Strategy units without their long-context answer cannot be
		// compared with it; they count as failed.
		z.s.Failed += len(z.outs)
		return
	}
	lg, ok := group(*z.long, compint.LongWithSC)
	if !ok {
		z.s.Failed += 1 + len(z.outs)
		return
	}
	z.s.Instances++
	got := map[string]strategyOutcome{}
	for _, o := range z.outs {
		comp, ok1 := group(o, compint.Compacted)
		ub, ok2 := group(o, compint.UpperBound)
		if !ok1 || !ok2 || o.Retention == nil {
			z.s.Failed++
			continue
		}
		for _, k := range []cellKey{
			{o.Strategy, All, All, All},
			{o.Strategy, string(o.Location), string(o.Framing), o.SCType},
		} {
			c := z.cells[k]
			if c == nil {
				c = &cell{baselines: map[string]int{}}
				z.cells[k] = c
			}
			c.n++
			c.retained += b2f(o.Retention.Retained)
			c.evidence += b2f(o.Retention.Evidence.Near())
			c.longSC += lg.Score
			c.comp += comp.Score
			c.ub += ub.Score
			c.baselines[o.Baseline]++
		}
		got[o.Strategy] = strategyOutcome{retained: o.Retention.Retained, compliant: comp.Score == 1}
	}
	names := make([]string, 0, len(got))
	for n := range got {
		names = append(names, n)
	}
	slices.Sort(names)
	for i, a := range names {
		for _, b := range names[i+1:] {
			oa, ob := got[a], got[b]
			z.pair(a, b, "retention", oa.retained, ob.retained)
			z.pair(a, b, "compliance", oa.compliant, ob.compliant)
		}
	}
}

func (z *Summarizer) pair(a, b, measure string, x, y bool) {
	k := pairKey{a, b, measure}
	p := z.pairs[k]
	if p == nil {
		p = &pairCount{}
		z.pairs[k] = p
	}
	p.n++
	switch {
	case x && !y:
		p.aOnly++
	case y && !x:
		p.bOnly++
	}
}

// Summary returns the section for the units added so far. It may be called
// once, after the last Add.
func (z *Summarizer) Summary() Summary {
	z.close()
	z.cur = ""
	s := z.s
	s.MinDenominator = z.minDen
	s.Contexts = len(z.contexts)
	s.Rows = []Row{}
	keys := make([]cellKey, 0, len(z.cells))
	for k := range z.cells {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b cellKey) int {
		return cmp.Or(cmp.Compare(a.strategy, b.strategy), allFirst(a.location, b.location), cmp.Compare(a.location, b.location),
			allFirst(a.framing, b.framing), cmp.Compare(a.framing, b.framing), allFirst(a.scType, b.scType), cmp.Compare(a.scType, b.scType))
	})
	for _, k := range keys {
		c := z.cells[k]
		// The no-SC baseline of each instance of the cell, weighted by how
		// many of the cell's instances share it; an instance whose baseline
		// was not answered leaves the baseline rate over fewer instances.
		var lx float64
		ln := 0
		for id, n := range c.baselines {
			if sc, ok := z.base[id]; ok {
				lx += sc * float64(n)
				ln += n
			}
		}
		r := Row{Strategy: k.strategy, Location: k.location, Framing: k.framing, SCType: k.scType, N: c.n,
			Retention:  compint.NewRate(c.retained, c.n, Level),
			Evidence:   compint.NewRate(c.evidence, c.n, Level),
			LongWithSC: compint.NewRate(c.longSC, c.n, Level),
			LongNoSC:   compint.NewRate(lx, ln, Level),
			Compacted:  compint.NewRate(c.comp, c.n, Level),
			UpperBound: compint.NewRate(c.ub, c.n, Level),
		}
		r.Effect = compint.EffectRetention(r.Compacted.Value, r.LongNoSC.Value, r.UpperBound.Value, z.minDen)
		s.Rows = append(s.Rows, r)
	}
	s.Pairs = []PairTest{}
	pk := make([]pairKey, 0, len(z.pairs))
	for k := range z.pairs {
		pk = append(pk, k)
	}
	slices.SortFunc(pk, func(a, b pairKey) int {
		return cmp.Or(cmp.Compare(a.a, b.a), cmp.Compare(a.b, b.b), cmp.Compare(a.measure, b.measure))
	})
	for _, k := range pk {
		p := z.pairs[k]
		s.Pairs = append(s.Pairs, PairTest{A: k.a, B: k.b, Measure: k.measure, N: p.n, AOnly: p.aOnly, BOnly: p.bOnly,
			P: stats.McNemarExact(p.aOnly, p.bOnly)})
	}
	return s
}

// group returns o's result for g.
func group(o Output, g compint.Group) (GroupResult, bool) {
	for _, r := range o.Groups {
		if r.Group == g && !math.IsNaN(r.Score) {
			return r, true
		}
	}
	return GroupResult{}, false
}

func allFirst(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == All:
		return -1
	case b == All:
		return 1
	}
	return 0
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
