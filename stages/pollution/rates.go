package pollution

import (
	"fmt"
	"math"
	"slices"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
)

// Rate is Count out of Of with its 95% Wilson interval. Rate, Lo and Hi are
// NaN when Of is 0: there was nothing to measure, which is not a rate of 0.
type Rate struct {
	Count, Of    int
	Rate, Lo, Hi float64
}

func rateOf(k, n int) Rate {
	r := Rate{Count: k, Of: n, Rate: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	if n > 0 {
		iv := stats.Wilson(float64(k), n, 0.95)
		r.Rate, r.Lo, r.Hi = float64(k)/float64(n), iv.Lo, iv.Hi
	}
	return r
}

// CategoryRate is one category's share of a variant's reviewed replies and
// conversations.
type CategoryRate struct {
	Category      string
	Replies       Rate // replies labelled with the category, of the replies reviewed
	Conversations Rate // conversations with such a reply (sample 0), of the conversations reviewed
	// MeanConfidence is the annotator's mean confidence over the replies
	// labelled with the category (NaN when there are none), as Huang et
	// al.'s Table 1 reports it.
	MeanConfidence float64
}

// VariantRates is the pollution of one variant's replies: the dataset's own
// (variant VariantDataset) or those of one respond variant.
type VariantRates struct {
	Variant string // the pollution variant: "llm", "responses:fc", …
	Source  string // OriginDataset, or the respond variant ("fc", "fc@big")
	Units   int    // units read
	// Replies counts the replies reviewed: one per dataset unit, one per
	// labelled sample of a generated unit. They are the denominator of
	// every rate.
	Replies int
	// Failed counts replies the annotator could not review (a malformed
	// answer after retries, a rejected request, an output that does not
	// decode); Unavailable counts generated units with no reply to review
	// (respond's unit missing, failed or of another version). Neither is
	// in any rate.
	Failed      int
	Unavailable int
	Any         Rate           // replies polluted in any category
	Categories  []CategoryRate // in Categories() order
	// AbsentConfidence is the mean confidence of the labels that found no
	// pollution; NaN when there are none.
	AbsentConfidence float64
	// Conversations counts conversations with a reviewed reply of sample
	// 0; AnyConversations those where one of them is polluted. Sample 0
	// only, so that drawing more samples does not inflate the
	// conversation rate against the dataset's one reply per turn.
	Conversations    int
	AnyConversations Rate
}

// PairedTest compares two variants on the replies both reviewed: the same
// conversation, turn and sample index (the dataset has sample 0 only). For
// a category, a reply counts as polluted when it is labelled with that
// category; for Category "" when it is polluted at all.
type PairedTest struct {
	A, B     string // variants, A first in report order
	Category string // "" for any category
	Pairs    int    // replies reviewed under both
	// PollutedA and PollutedB count the polluted replies of each side
	// among the pairs, so PollutedA/Pairs and PollutedB/Pairs are the two
	// rates on the same turns.
	PollutedA, PollutedB int
	// OnlyA and OnlyB are the discordant pairs: polluted under A and not
	// under B, and the reverse. With A the full context and B the filler
	// strategy, OnlyA is the count of flagged replies that turned clean
	// with filler, the flip Huang et al. report.
	OnlyA, OnlyB int
	// P is the exact two-sided McNemar p-value (stats.McNemarExact) of
	// OnlyA against OnlyB; 1 when there is no discordant pair. It treats
	// the pairs as independent, though turns of one conversation (and
	// samples of one turn) are not; read it with that in mind.
	P float64
}

// RateSummary is what Rates found.
type RateSummary struct {
	Variants []VariantRates // the dataset variant first, then by name
	// Pairs holds, for each two variants in report order, the test on
	// any category and then one per category in Categories() order.
	Pairs []PairedTest
}

// Rates folds pollution units, of the dataset variant and of any number of
// "responses:" variants, into rates per variant and category and paired
// tests between variants. It is streaming: Add takes one unit at a time and
// keeps only the current turn's outcomes and the current conversation's
// flags, so memory does not grow with the run. Pairing needs the units of
// one conversation and turn to arrive together, which is the order
// ledger.Units yields when it is given every variant at once (by
// conversation, turn, variant); Add returns an error for units out of that
// order. The zero Rates is not ready; use NewRates.
type Rates struct {
	started bool
	seq     int64
	conv    string
	turn    int

	turnOut map[string][]outcome    // variant → labelled samples of the current turn
	convOut map[string]*convOutcome // variant → the current conversation's sample-0 flags
	vars    map[string]*variantAcc
	pairs   map[[2]string]*pairAcc
}

// outcome is one labelled reply.
type outcome struct {
	sample   int
	present  bool
	category string
}

// convOutcome is what a variant's sample-0 replies of one conversation show.
type convOutcome struct {
	any  bool
	cats map[string]bool
}

type variantAcc struct {
	source                       string
	units, replies, failed, unav int
	polluted                     int
	cat                          map[string]int
	catConf                      map[string]float64
	absentN                      int
	absentConf                   float64
	convs, convPolluted          int
	convCat                      map[string]int
}

// pairAcc counts one pair of variants: index 0 is any category, 1… the
// categories in Categories() order.
type pairAcc struct {
	pairs                int
	pa, pb, onlyA, onlyB []int
}

// NewRates returns an empty fold.
func NewRates() *Rates {
	return &Rates{turnOut: map[string][]outcome{}, convOut: map[string]*convOutcome{}, vars: map[string]*variantAcc{}, pairs: map[[2]string]*pairAcc{}}
}

// before orders variants for the report: the dataset's first, then by name.
func before(a, b string) bool {
	_, ga := RespondVariant(a)
	_, gb := RespondVariant(b)
	if ga != gb {
		return gb
	}
	return a < b
}

// reportOrder returns the variants of m in report order (before).
func reportOrder[V any](m map[string]V) []string {
	vs := make([]string, 0, len(m))
	for v := range m {
		vs = append(vs, v)
	}
	slices.SortFunc(vs, func(a, b string) int {
		if before(a, b) {
			return -1
		}
		return 1
	})
	return vs
}

// Add folds one unit in. A unit that failed or does not decode is counted
// as such, never as a clean reply. It returns an error only for a unit out
// of order (see Rates).
func (r *Rates) Add(u ledger.Unit) error {
	switch {
	case !r.started:
		r.started, r.seq, r.conv, r.turn = true, u.ConvSeq, u.ConvID, u.Turn
	case u.ConvSeq < r.seq || (u.ConvSeq == r.seq && u.ConvID != r.conv):
		return fmt.Errorf("folding pollution unit %s: conversation %s (seq %d) after %s (seq %d); units must come ordered by conversation and turn", u.Key, u.ConvID, u.ConvSeq, r.conv, r.seq)
	case u.ConvSeq > r.seq:
		r.endTurn()
		r.endConversation()
		r.seq, r.conv, r.turn = u.ConvSeq, u.ConvID, u.Turn
	case u.Turn < r.turn:
		return fmt.Errorf("folding pollution unit %s: turn %d of %s after turn %d; units must come ordered by conversation and turn", u.Key, u.Turn, u.ConvID, r.turn)
	case u.Turn > r.turn:
		r.endTurn()
		r.turn = u.Turn
	}
	va := r.vars[u.Variant]
	if va == nil {
		src, gen := RespondVariant(u.Variant)
		if !gen {
			src = OriginDataset
		}
		va = &variantAcc{source: src, cat: map[string]int{}, catConf: map[string]float64{}, convCat: map[string]int{}}
		r.vars[u.Variant] = va
	}
	va.units++
	if _, gen := RespondVariant(u.Variant); gen {
		g, err := DecodeGenerated(u.Output)
		switch {
		case err != nil:
			va.failed++
		case g.Unavailable != "":
			va.unav++
		default:
			// A failed unit keeps the labels of the samples that were
			// reviewed; they count, and the others count as failed.
			for _, s := range g.Samples {
				if s.Label == nil {
					va.failed++
					continue
				}
				r.label(u.Variant, va, s.Index, *s.Label)
			}
		}
		return nil
	}
	if u.Status != ledger.Done {
		va.failed++
		return nil
	}
	l, err := Decode(u.Output)
	if err != nil {
		va.failed++
		return nil
	}
	r.label(u.Variant, va, 0, l)
	return nil
}

// label counts one reviewed reply of variant v.
func (r *Rates) label(v string, va *variantAcc, sample int, l Label) {
	va.replies++
	if l.Present {
		va.polluted++
		va.cat[l.Category]++
		va.catConf[l.Category] += l.Confidence
	} else {
		va.absentN++
		va.absentConf += l.Confidence
	}
	r.turnOut[v] = append(r.turnOut[v], outcome{sample: sample, present: l.Present, category: l.Category})
	if sample != 0 {
		return
	}
	co := r.convOut[v]
	if co == nil {
		co = &convOutcome{cats: map[string]bool{}}
		r.convOut[v] = co
	}
	if l.Present {
		co.any = true
		co.cats[l.Category] = true
	}
}

// endTurn pairs the current turn's outcomes between every two variants.
func (r *Rates) endTurn() {
	if len(r.turnOut) < 2 {
		clear(r.turnOut)
		return
	}
	vs := reportOrder(r.turnOut)
	cats := Categories()
	for i, a := range vs {
		for _, b := range vs[i+1:] {
			key := [2]string{a, b}
			p := r.pairs[key]
			if p == nil {
				n := len(cats) + 1
				p = &pairAcc{pa: make([]int, n), pb: make([]int, n), onlyA: make([]int, n), onlyB: make([]int, n)}
				r.pairs[key] = p
			}
			for _, oa := range r.turnOut[a] {
				for _, ob := range r.turnOut[b] {
					if oa.sample != ob.sample {
						continue
					}
					p.pairs++
					p.count(0, oa.present, ob.present)
					for ci, c := range cats {
						p.count(ci+1, oa.present && oa.category == c, ob.present && ob.category == c)
					}
				}
			}
		}
	}
	clear(r.turnOut)
}

func (p *pairAcc) count(i int, a, b bool) {
	switch {
	case a && b:
		p.pa[i]++
		p.pb[i]++
	case a:
		p.pa[i]++
		p.onlyA[i]++
	case b:
		p.pb[i]++
		p.onlyB[i]++
	}
}

// endConversation counts the current conversation for every variant that
// reviewed a sample-0 reply in it.
func (r *Rates) endConversation() {
	for v, co := range r.convOut {
		va := r.vars[v]
		va.convs++
		if co.any {
			va.convPolluted++
		}
		for c := range co.cats {
			va.convCat[c]++
		}
	}
	clear(r.convOut)
}

// Result ends the fold and returns the summary. Call it once, after the
// last Add.
func (r *Rates) Result() RateSummary {
	r.endTurn()
	r.endConversation()
	names := reportOrder(r.vars)
	var out RateSummary
	for _, v := range names {
		va := r.vars[v]
		vr := VariantRates{Variant: v, Source: va.source, Units: va.units, Replies: va.replies, Failed: va.failed, Unavailable: va.unav,
			Any: rateOf(va.polluted, va.replies), AbsentConfidence: mean(va.absentConf, va.absentN),
			Conversations: va.convs, AnyConversations: rateOf(va.convPolluted, va.convs)}
		for _, c := range Categories() {
			vr.Categories = append(vr.Categories, CategoryRate{Category: c, Replies: rateOf(va.cat[c], va.replies),
				Conversations: rateOf(va.convCat[c], va.convs), MeanConfidence: mean(va.catConf[c], va.cat[c])})
		}
		out.Variants = append(out.Variants, vr)
	}
	for i, a := range names {
		for _, b := range names[i+1:] {
			p := r.pairs[[2]string{a, b}]
			if p == nil {
				continue
			}
			for ci, c := range append([]string{""}, Categories()...) {
				out.Pairs = append(out.Pairs, PairedTest{A: a, B: b, Category: c, Pairs: p.pairs,
					PollutedA: p.pa[ci], PollutedB: p.pb[ci], OnlyA: p.onlyA[ci], OnlyB: p.onlyB[ci],
					P: stats.McNemarExact(p.onlyA[ci], p.onlyB[ci])})
			}
		}
	}
	return out
}

func mean(sum float64, n int) float64 {
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}
