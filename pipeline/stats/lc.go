package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// LengthSample is one judged comparison with the lengths of the two
// answers, in any unit (AlpacaEval uses characters; tokens work as well,
// because the model only sees the difference divided by its standard
// deviation).
type LengthSample struct {
	Outcome    Outcome // in terms of strategies A and B
	LenA, LenB int     // lengths of A's and B's answers, >= 0
}

// LengthVerdict is a LengthSample with the conversation it belongs to, the
// cluster of the bootstrap.
type LengthVerdict struct {
	Conversation string
	Outcome      Outcome
	LenA, LenB   int
}

// lcGrid is the number of steps of the grid the length feature is rounded
// to: x = tanh(Δ/s) ∈ (-1, 1) becomes a multiple of 2/lcGrid. The fit then
// runs on a table of at most lcGrid+1 rows whatever the number of
// verdicts, and each bootstrap round only counts verdicts into that
// table. Rounding to a step of about 0.004 moves a verdict's log-odds by
// at most |slope|·0.002, and the errors of many verdicts mostly cancel: on
// 3,700 verdicts the rate moves by 6e-6, against a standard error near
// 0.01 (TestLCGridMatchesExactFit). A finer grid costs time in every
// bootstrap round when verdicts are few.
const lcGrid = 512

// lcSlopeVar is the variance of the weak ridge on the slope: the fit
// maximises the log-likelihood minus slope²/(2·lcSlopeVar). Its only job is
// to keep the slope finite when the length feature alone separates wins
// from losses (possible with few verdicts or in a bootstrap round); it adds
// the information of a fraction of one verdict, so with real data it moves
// nothing. The intercept is not penalised: with no length differences the
// fit gives the raw win rate exactly.
const lcSlopeVar = 25.0

// lcSteepSlope is the slope beyond which a fit is flagged: one standard
// deviation of length difference would then multiply the odds by more than
// e^(5·tanh 1) ≈ 45, which happens when length nearly decides the verdicts.
const lcSteepSlope = 5

// lcNearShare is the share of verdicts within a quarter standard deviation
// of equal length below which the fit is flagged: the rate at equal length
// is then read where there is little data.
const lcNearShare = 0.05

// LCData accumulates verdicts with answer lengths, one conversation at a
// time, for the length-controlled win rate. It stores 5 bytes per valid
// verdict and 4 per conversation (a million verdicts take about 5 MB)
// rather than the verdicts themselves; Fit adds 2 bytes per verdict while
// it runs. The zero value is empty and ready to use.
//
// The bootstrap visits conversations in the order they were added, so the
// same conversations added in the same order with the same seed give the
// same interval bit for bit. LengthControlledWinRate adds them in sorted
// id order, as ClusterBootstrap visits them.
type LCData struct {
	diff    []int32 // LenA − LenB of each valid verdict
	s2      []uint8 // twice its score: 2 A won, 1 tie, 0 B won
	ends    []int32 // end offset in diff of each conversation
	invalid int
}

// AddConversation adds the verdicts of one conversation (one pair, one
// dimension) as one cluster. Verdicts without a valid outcome are counted
// as invalid and left out; a conversation with none valid adds no
// cluster. A negative length or a difference beyond the int32 range is an
// error, and then nothing of the conversation is added.
func (d *LCData) AddConversation(samples []LengthSample) error {
	valid := 0
	for i, s := range samples {
		if s.LenA < 0 || s.LenB < 0 {
			return fmt.Errorf("stats: adding a conversation to the length-controlled fit: verdict %d has a negative length (A %d, B %d)", i, s.LenA, s.LenB)
		}
		if delta := int64(s.LenA) - int64(s.LenB); delta > math.MaxInt32 || delta < math.MinInt32 {
			return fmt.Errorf("stats: adding a conversation to the length-controlled fit: verdict %d has a length difference of %d, beyond ±%d", i, delta, math.MaxInt32)
		}
		if s.Outcome.Valid() {
			valid++
		}
	}
	if int64(len(d.diff))+int64(valid) > math.MaxInt32 {
		return fmt.Errorf("stats: adding a conversation to the length-controlled fit: more than %d verdicts", math.MaxInt32)
	}
	for _, s := range samples {
		if !s.Outcome.Valid() {
			d.invalid++
			continue
		}
		d.diff = append(d.diff, int32(s.LenA-s.LenB))
		d.s2 = append(d.s2, uint8(score2(s.Outcome)))
	}
	if valid > 0 {
		d.ends = append(d.ends, int32(len(d.diff)))
	}
	return nil
}

// N is the number of valid verdicts added.
func (d *LCData) N() int { return len(d.diff) }

// Conversations is the number of conversations with a valid verdict.
func (d *LCData) Conversations() int { return len(d.ends) }

// LCResult is the length-controlled win rate of strategy A with its
// conversation-bootstrap interval. Rates are NaN when nothing could be
// estimated; Warning then says why.
type LCResult struct {
	N, Conversations, Invalid int

	WinRate   float64 // raw (wins + ties/2) / n, for comparison
	LCWinRate float64 // σ(Intercept): the modelled rate at equal lengths

	// The model is P(A wins) = σ(Intercept + Slope·tanh((LenA−LenB)/Scale)).
	Intercept, Slope float64
	Scale            float64 // sample standard deviation of LenA − LenB

	Level     float64
	Resamples int
	Seed      uint64
	Bootstrap Interval // percentile interval of LCWinRate

	SmallN           bool   // N < MinN
	FewConversations bool   // Conversations < MinConversations
	Warning          string // human-readable reasons; "" when none apply
}

// Fit computes the length-controlled win rate and its interval (see the
// package documentation for the model). Level, Resamples, Seed, MinN and
// MinConversations of opt are used, with the usual defaults.
//
// AlpacaEval's own model also has a per-instruction difficulty term,
// learned across many models on one fixed instruction set, and fits with
// scikit-learn's cross-validated L1 penalty; a run here has neither a
// fixed instruction set nor other models, so only the intercept and the
// length slope are fitted, by maximum likelihood (its "minimal" variant).
func (d *LCData) Fit(opt Options) (r LCResult) {
	opt = opt.withDefaults()
	n := len(d.diff)
	r = LCResult{
		N: n, Conversations: len(d.ends), Invalid: d.invalid,
		WinRate: nanValue(), LCWinRate: nanValue(), Intercept: nanValue(), Slope: nanValue(), Scale: nanValue(),
		Level: opt.Level, Resamples: opt.Resamples, Seed: opt.Seed, Bootstrap: nanInterval(),
		SmallN: n < opt.MinN, FewConversations: len(d.ends) < opt.MinConversations,
	}
	var ws []string
	defer func() { r.Warning = strings.Join(ws, "; ") }()
	if n == 0 {
		ws = append(ws, "no comparisons with lengths: nothing to estimate")
		if d.invalid > 0 {
			ws = append(ws, fmt.Sprintf("%d verdicts without a valid outcome left out", d.invalid))
		}
		return r
	}
	if r.SmallN {
		ws = append(ws, fmt.Sprintf("small n: %d comparisons (fewer than %d); the length-controlled rate is rough", n, opt.MinN))
	}
	if r.FewConversations {
		ws = append(ws, fmt.Sprintf("only %d conversations (fewer than %d); the conversation bootstrap understates the uncertainty", len(d.ends), opt.MinConversations))
	}
	if d.invalid > 0 {
		ws = append(ws, fmt.Sprintf("%d verdicts without a valid outcome left out", d.invalid))
	}
	var s2 int64
	for _, v := range d.s2 {
		s2 += int64(v)
	}
	r.WinRate = float64(s2) / float64(2*n)

	scale, constant := d.scale()
	r.Scale = scale
	if constant && d.diff[0] != 0 {
		ws = append(ws, fmt.Sprintf("every comparison has the same length difference (%d): length and strategy cannot be told apart", d.diff[0]))
		return r
	}

	t := d.table(scale)
	full := t.counts(nil)
	r.Intercept, r.Slope = t.fit(full, math.NaN(), 0)
	r.LCWinRate = lcRate(r.Intercept)
	if math.Abs(r.Slope) > lcSteepSlope {
		ws = append(ws, "the length difference nearly decides the verdicts: the rate at equal lengths is an extrapolation")
	}
	if near := d.nearEqual(scale); near < lcNearShare {
		ws = append(ws, fmt.Sprintf("only %.1f%% of comparisons are near equal length (within a quarter standard deviation): the rate at equal lengths is an extrapolation", 100*near))
	}
	r.Bootstrap = d.bootstrap(t, r.Intercept, r.Slope, opt)
	return r
}

// LengthControlledWinRate groups vs by conversation, adds the
// conversations in sorted id order and fits (see LCData.Fit). Its errors
// are those of AddConversation.
func LengthControlledWinRate(vs []LengthVerdict, opt Options) (LCResult, error) {
	by := map[string][]LengthSample{}
	for _, v := range vs {
		by[v.Conversation] = append(by[v.Conversation], LengthSample{Outcome: v.Outcome, LenA: v.LenA, LenB: v.LenB})
	}
	ids := make([]string, 0, len(by))
	for id := range by {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var d LCData
	for _, id := range ids {
		if err := d.AddConversation(by[id]); err != nil {
			return LCResult{}, fmt.Errorf("conversation %q: %w", id, err)
		}
	}
	return d.Fit(opt), nil
}

// scale returns the sample standard deviation of the length differences
// (n−1 in the denominator, as pandas' std that AlpacaEval uses) and whether
// they are all equal, in which case the standard deviation is 0 and the
// feature is taken as 0.
func (d *LCData) scale() (sd float64, constant bool) {
	constant = true
	var sum float64
	for _, v := range d.diff {
		sum += float64(v)
		if v != d.diff[0] {
			constant = false
		}
	}
	if constant || len(d.diff) < 2 {
		return 0, true
	}
	mean := sum / float64(len(d.diff))
	var ss float64
	for _, v := range d.diff {
		e := float64(v) - mean
		ss += e * e
	}
	return math.Sqrt(ss / float64(len(d.diff)-1)), false
}

// nearEqual is the share of verdicts with |LenA − LenB| ≤ scale/4.
func (d *LCData) nearEqual(scale float64) float64 {
	near := 0
	for _, v := range d.diff {
		if math.Abs(float64(v)) <= scale/4 {
			near++
		}
	}
	return float64(near) / float64(len(d.diff))
}

// lcTable is the data of the fit in grid form: xs holds the grid values in
// use, and code[i] = 3·(index of verdict i's value in xs) + its score2.
type lcTable struct {
	xs   []float64
	code []uint16
}

func (d *LCData) table(scale float64) lcTable {
	bin := func(v int32) int {
		if scale == 0 {
			return lcGrid / 2
		}
		x := math.Tanh(float64(v) / scale)
		return int(math.Round((x + 1) / 2 * lcGrid))
	}
	var used [lcGrid + 1]int32
	for i := range used {
		used[i] = -1
	}
	for _, v := range d.diff {
		used[bin(v)] = 0
	}
	var t lcTable
	for k := range used {
		if used[k] == 0 {
			used[k] = int32(len(t.xs))
			t.xs = append(t.xs, 2*float64(k)/lcGrid-1)
		}
	}
	t.code = make([]uint16, len(d.diff))
	for i, v := range d.diff {
		t.code[i] = uint16(3*used[bin(v)] + int32(d.s2[i]))
	}
	return t
}

// counts tallies codes into cnt (allocated when nil): cnt[3u+s] is the
// number of verdicts at grid value xs[u] with twice-score s.
func (t lcTable) counts(cnt []int64) []int64 {
	if cnt == nil {
		cnt = make([]int64, 3*len(t.xs))
	}
	for _, c := range t.code {
		cnt[c]++
	}
	return cnt
}

// fit maximises the penalised log-likelihood of the logistic model with
// fractional outcomes (a tie is half a win) by Newton's method, from
// (a0, b0), or from the intercept-only solution when a0 is NaN. All wins
// (all losses) give an intercept of +Inf (−Inf) and slope 0, the limit of
// the fit.
//
// A step is kept when the objective's slope along it at its end is no
// steeper downhill than it was uphill at its start; by the trapezoid rule
// the objective then rose (exactly so were it quadratic, and the
// log-likelihood near its maximum nearly is). Otherwise the step is
// halved. This catches overshooting without computing the log-likelihood
// itself, which would cost a logarithm per grid value, and accepts the
// ordinary Newton step, whose end slope is about zero. Steps below 1e-6
// are taken as they are: there Newton's method is in its quadratic phase.
func (t lcTable) fit(cnt []int64, a0, b0 float64) (a, b float64) {
	var nTot, sTot float64
	for u := range t.xs {
		c := cnt[3*u : 3*u+3]
		nTot += float64(c[0] + c[1] + c[2])
		sTot += float64(c[1])/2 + float64(c[2])
	}
	switch {
	case sTot == 0:
		return math.Inf(-1), 0
	case sTot == nTot:
		return math.Inf(1), 0
	}
	if math.IsNaN(a0) {
		a0, b0 = math.Log(sTot/(nTot-sTot)), 0
	}
	a, b = a0, b0
	ga, gb, haa, hab, hbb := t.eval(cnt, a, b)
	for range 100 {
		// Newton step: solve H·δ = −g for the 2×2 negative definite H.
		det := haa*hbb - hab*hab
		da := -(hbb*ga - hab*gb) / det
		db := -(haa*gb - hab*ga) / det
		if math.Abs(da)+math.Abs(db) < 1e-10 {
			break
		}
		for step := 1.0; ; step /= 2 {
			na, nb := a+step*da, b+step*db
			nga, ngb, nhaa, nhab, nhbb := t.eval(cnt, na, nb)
			if nga*da+ngb*db >= -(ga*da+gb*db) || step*(math.Abs(da)+math.Abs(db)) < 1e-6 {
				a, b, ga, gb, haa, hab, hbb = na, nb, nga, ngb, nhaa, nhab, nhbb
				break
			}
		}
	}
	return a, b
}

// eval returns the gradient of the penalised log-likelihood at (a, b) and
// its Hessian (aa, ab, bb).
func (t lcTable) eval(cnt []int64, a, b float64) (ga, gb, haa, hab, hbb float64) {
	for u, x := range t.xs {
		c := cnt[3*u : 3*u+3]
		n := float64(c[0] + c[1] + c[2])
		if n == 0 {
			continue
		}
		s := float64(c[1])/2 + float64(c[2])
		p := lcRate(a + b*x)
		res := s - n*p
		w := n * p * (1 - p)
		ga += res
		gb += res * x
		haa -= w
		hab -= w * x
		hbb -= w * x * x
	}
	gb -= b / lcSlopeVar
	hbb -= 1 / lcSlopeVar
	return ga, gb, haa, hab, hbb
}

// lcRate is σ(a), exactly 0 or 1 at ∓Inf.
func lcRate(a float64) float64 { return 1 / (1 + math.Exp(-a)) }

// bootstrap resamples conversations as ClusterBootstrap does (same PCG
// stream, same Lemire draws, one draw per conversation per round) and
// refits each round from the full-data estimate, keeping the scale of the
// length feature at its full-data value.
func (d *LCData) bootstrap(t lcTable, a, b float64, opt Options) Interval {
	k := uint64(len(d.ends))
	src := rand.NewPCG(opt.Seed, 0)
	cnt := make([]int64, 3*len(t.xs))
	// Each round first counts how often each conversation was drawn, then
	// adds the conversations in storage order: the same multiset as adding
	// them as drawn, but one random memory access per draw instead of
	// two, and the verdicts read in order (with a million verdicts the
	// cache misses, not the arithmetic, set the pace).
	mult := make([]uint32, k)
	rates := make([]float64, opt.Resamples)
	for i := range rates {
		clear(cnt)
		clear(mult)
		for range k {
			mult[boundedDraw(src, k)]++
		}
		lo := int32(0)
		for c, m := range mult {
			hi := d.ends[c]
			if m != 0 {
				for _, code := range t.code[lo:hi] {
					cnt[code] += int64(m)
				}
			}
			lo = hi
		}
		ra, _ := t.fit(cnt, a, b)
		rates[i] = lcRate(ra)
	}
	slices.Sort(rates)
	alpha := 1 - opt.Level
	return Interval{quantile(rates, alpha/2), quantile(rates, 1-alpha/2)}
}
