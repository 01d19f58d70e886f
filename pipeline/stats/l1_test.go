package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// sparseWorld draws rows of d features, feature j ~ Normal(mean[j],
// sd[j]), and outcomes from a logistic model on the standardised
// features with coefficients beta (most zero) and intercept b0. A row that
// is not a win is a tie with probability tieP and otherwise a loss, so
// under TiesAsLosses the model is exactly logistic.
type sparseWorld struct {
	n     int
	beta  []float64
	b0    float64
	mean  []float64
	sd    []float64
	tieP  float64
	seed  uint64
	convs int // rows share conversations in runs of n/convs; 0: one each
}

func (w sparseWorld) rows() (X [][]float64, y []Outcome, groups []string) {
	rng := rand.New(rand.NewPCG(w.seed, 7))
	d := len(w.beta)
	for i := range w.n {
		x := make([]float64, d)
		eta := w.b0
		for j := range d {
			z := rng.NormFloat64()
			x[j] = w.mean[j] + w.sd[j]*z
			eta += w.beta[j] * z
		}
		o := BWins
		switch {
		case rng.Float64() < lcRate(eta):
			o = AWins
		case rng.Float64() < w.tieP:
			o = Tie
		}
		X = append(X, x)
		y = append(y, o)
		g := i
		if w.convs > 0 {
			g = i * w.convs / w.n
		}
		groups = append(groups, fmt.Sprintf("conv-%05d", g))
	}
	return X, y, groups
}

func defaultSparse() sparseWorld {
	return sparseWorld{
		n:    2500,
		beta: []float64{1.2, 0, -0.8, 0, 0, 0.5},
		b0:   0.1,
		mean: []float64{3, -1, 100, 0, 7, 0.5},
		sd:   []float64{1, 2, 40, 0.1, 3, 0.5},
		tieP: 0.3,
		seed: 1,
	}
}

// The rule has three real effects and three features of pure noise. The
// fit keeps the real effects with their signs and their order of size,
// and cross-validation picks a strength well inside the grid. The noise
// features come out at or near zero; with the one-standard-error rule
// they come out exactly zero. F1 and accuracy change little across
// strengths near their best, so they may choose a strength that shrinks
// the coefficients by half; log loss rewards calibrated probabilities and
// keeps them within 35% of the truth.
func TestL1RecoversSparseRule(t *testing.T) {
	w := defaultSparse()
	X, y, _ := w.rows()
	for _, metric := range []CVMetric{MetricF1, MetricAccuracy, MetricBalancedAccuracy, MetricLogLoss} {
		for _, oneSE := range []bool{false, true} {
			if oneSE && (metric == MetricAccuracy || metric == MetricBalancedAccuracy) {
				continue // the rule is the same for every metric; two suffice
			}
			t.Run(fmt.Sprintf("%v/1se=%v", metric, oneSE), func(t *testing.T) {
				m, err := FitL1Logistic(X, y, L1Options{Seed: 3, Metric: metric, OneSE: oneSE})
				if err != nil {
					t.Fatal(err)
				}
				cv := m.CVScore()
				t.Logf("λ %.5f (index %d of %d, λmax %.4f) C %.4g coef %.3f intercept %.3f; CV acc %.3f bal %.3f F1 %.3f logloss %.3f, SD %.3f",
					m.Lambda, m.LambdaIndex, len(m.CV), m.CV[0].Lambda, m.C, m.Coef, m.Intercept, cv.Accuracy, cv.BalancedAccuracy, cv.F1, cv.LogLoss, cv.SD)
				for j, b := range w.beta {
					got := m.Coef[j]
					switch {
					case b == 0 && oneSE && got != 0:
						t.Errorf("noise feature %d: coefficient %.4f, want 0", j, got)
					case b == 0 && math.Abs(got) > 0.05:
						t.Errorf("noise feature %d: coefficient %.4f, want about 0", j, got)
					case b != 0 && math.Signbit(got) != math.Signbit(b):
						t.Errorf("feature %d: coefficient %.4f, want the sign of %.2f", j, got, b)
					case b != 0 && metric == MetricLogLoss && !oneSE && math.Abs(got-b) > 0.35*math.Abs(b):
						t.Errorf("feature %d: coefficient %.4f, want about %.2f", j, got, b)
					}
				}
				if !(math.Abs(m.Coef[0]) > math.Abs(m.Coef[2]) && math.Abs(m.Coef[2]) > math.Abs(m.Coef[5])) {
					t.Errorf("coefficients %.3f: want |β0| > |β2| > |β5| as in the rule", m.Coef)
				}
				chosen := cvValue(cv, metric)
				for li, p := range m.CV {
					if v := cvValue(p, metric); !oneSE && better(metric, v, chosen) {
						t.Errorf("λ index %d scores %v under %v, better than the chosen %v", li, v, metric, chosen)
					}
					if oneSE && li < m.LambdaIndex && math.Abs(cvValue(p, metric)-chosen) < 1e-15 {
						t.Errorf("1-SE rule: stronger λ index %d scores the same as the chosen one", li)
					}
				}
				if m.LambdaIndex == 0 || m.Lambda > m.CV[0].Lambda/2 {
					t.Errorf("chose λ %.5f (index %d) of [%.5f, %.5f]", m.Lambda, m.LambdaIndex, m.CV[len(m.CV)-1].Lambda, m.CV[0].Lambda)
				}
				if cv.Accuracy < 0.68 || cv.F1 < 0.68 {
					t.Errorf("held-out accuracy %.3f, F1 %.3f: the rule is learnable to about 0.72", cv.Accuracy, cv.F1)
				}
			})
		}
	}
}

// Outcomes that do not depend on the features: log loss prefers the
// intercept-only model, so the strongest penalty wins and every
// coefficient is zero.
func TestL1NoSignal(t *testing.T) {
	w := defaultSparse()
	w.beta = make([]float64, len(w.beta))
	X, y, _ := w.rows()
	m, err := FitL1Logistic(X, y, L1Options{Seed: 3, Metric: MetricLogLoss})
	if err != nil {
		t.Fatal(err)
	}
	nz := 0
	for _, c := range m.Coef {
		if c != 0 {
			nz++
		}
	}
	if nz > 1 || m.LambdaIndex > len(m.CV)/3 {
		t.Errorf("no signal: λ index %d, coefficients %.4f", m.LambdaIndex, m.Coef)
	}
}

// The solution satisfies the lasso's optimality conditions on the whole
// data at the chosen strength: the gradient of the weighted log loss is 0
// for the intercept, −λ·sign(β_j) for a non-zero β_j, and at most λ in
// size for a zero one.
func TestL1Optimality(t *testing.T) {
	w := defaultSparse()
	w.n = 1500
	X, y, _ := w.rows()
	for _, ties := range []TiePolicy{TiesAsLosses, TiesHalf, TiesDropped} {
		for _, cw := range []ClassWeights{BalancedClasses, UnweightedClasses} {
			// A short grid: the point is the solver, not the search.
			opt := L1Options{Seed: 3, Ties: ties, Classes: cw, Metric: MetricLogLoss, Lambdas: []float64{0.05, 0.01, 0.002}}
			m, err := FitL1Logistic(X, y, opt)
			if err != nil {
				t.Fatal(err)
			}
			ds, _ := newL1Data(X, y, opt.withDefaults())
			all := make([]bool, len(ds.rows))
			for i := range all {
				all[i] = true
			}
			p, _ := ds.problem(all, cw)
			beta := append([]float64{m.Intercept}, m.Coef...)
			p.objective(m.Lambda, beta) // fills η
			g := make([]float64, len(beta))
			for i, eta := range p.eta {
				r := p.w[i] * (lcRate(eta) - p.y[i])
				g[0] += r
				for j := range p.d {
					g[j+1] += r * p.z[j][i]
				}
			}
			const tol = 1e-6
			if math.Abs(g[0]) > tol {
				t.Errorf("ties %v classes %v: intercept gradient %g", ties, cw, g[0])
			}
			for j, b := range m.Coef {
				gj := g[j+1]
				switch {
				case b == 0 && math.Abs(gj) > m.Lambda+tol:
					t.Errorf("ties %v classes %v: β%d = 0 but |gradient| %g > λ %g", ties, cw, j, math.Abs(gj), m.Lambda)
				case b != 0 && math.Abs(gj+m.Lambda*math.Copysign(1, b)) > tol:
					t.Errorf("ties %v classes %v: β%d = %g but gradient %g, want %g", ties, cw, j, b, gj, -m.Lambda*math.Copysign(1, b))
				}
			}
		}
	}
}

// On imbalanced data (A wins about 15% of turns) an unweighted fit
// predicts "A wins" almost never; balanced class weights move the
// intercept so both classes count equally, and recall of the rare class
// (hence balanced accuracy) rises.
func TestL1BalancedWeights(t *testing.T) {
	w := defaultSparse()
	w.b0 = -2.2
	w.tieP = 0
	X, y, _ := w.rows()
	pos := 0
	for _, o := range y {
		if o == AWins {
			pos++
		}
	}
	share := float64(pos) / float64(len(y))
	fit := func(cw ClassWeights) L1Model {
		m, err := FitL1Logistic(X, y, L1Options{Seed: 3, Classes: cw, Metric: MetricLogLoss, PathLength: 10})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	bal, unw := fit(BalancedClasses), fit(UnweightedClasses)
	mean := func(xs []float64) float64 {
		var s float64
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	t.Logf("positives %.3f; balanced: intercept %.3f mean P %.3f bal acc %.3f weights %.3f; unweighted: intercept %.3f mean P %.3f bal acc %.3f",
		share, bal.Intercept, mean(bal.OOF), bal.CVScore().BalancedAccuracy, bal.ClassWeight, unw.Intercept, mean(unw.OOF), unw.CVScore().BalancedAccuracy)
	if share < 0.1 || share > 0.25 {
		t.Fatalf("fixture: %.3f positives, want about 0.15", share)
	}
	n := float64(len(y))
	if want := [2]float64{n / (2 * (n - float64(pos))), n / (2 * float64(pos))}; math.Abs(bal.ClassWeight[0]-want[0]) > 1e-12 || math.Abs(bal.ClassWeight[1]-want[1]) > 1e-12 {
		t.Errorf("class weights %v, want %v", bal.ClassWeight, want)
	}
	if unw.ClassWeight != [2]float64{1, 1} {
		t.Errorf("unweighted class weights %v", unw.ClassWeight)
	}
	if math.Abs(mean(unw.OOF)-share) > 0.03 {
		t.Errorf("unweighted mean held-out P %.3f, want about the positive share %.3f", mean(unw.OOF), share)
	}
	// Balanced weights make the class-weighted mean probability 1/2 (the
	// intercept's score equation) and so predict many more positives.
	var wp, ws float64
	predicted := func(m L1Model) (share float64) {
		for _, p := range m.OOF {
			if p >= 0.5 {
				share++
			}
		}
		return share / n
	}
	for i, o := range y {
		cw := bal.ClassWeight[0]
		if o == AWins {
			cw = bal.ClassWeight[1]
		}
		wp += cw * bal.OOF[i]
		ws += cw
	}
	if m := wp / ws; math.Abs(m-0.5) > 0.05 {
		t.Errorf("balanced fit: class-weighted mean held-out P %.3f, want about 0.5", m)
	}
	if pb, pu := predicted(bal), predicted(unw); pu > 0.1 || pb < 0.3 {
		t.Errorf("share predicted to win: balanced %.3f, unweighted %.3f", pb, pu)
	}
	if bal.Intercept <= unw.Intercept+1 {
		t.Errorf("balanced intercept %.3f not well above unweighted %.3f", bal.Intercept, unw.Intercept)
	}
	if bal.CVScore().BalancedAccuracy <= unw.CVScore().BalancedAccuracy+0.05 {
		t.Errorf("balanced accuracy: balanced fit %.3f, unweighted %.3f", bal.CVScore().BalancedAccuracy, unw.CVScore().BalancedAccuracy)
	}
}

// Ties as losses, as half, or dropped: the counts say what happened, and
// counting ties as losses lowers the predicted chance that A wins.
func TestL1TiePolicies(t *testing.T) {
	X, y, _ := defaultSparse().rows()
	ties := 0
	for _, o := range y {
		if o == Tie {
			ties++
		}
	}
	y[0] = 0 // one unjudged row
	fits := map[TiePolicy]L1Model{}
	for _, p := range []TiePolicy{TiesAsLosses, TiesHalf, TiesDropped} {
		m, err := FitL1Logistic(X, y, L1Options{Seed: 3, Ties: p, Classes: UnweightedClasses, Metric: MetricLogLoss, PathLength: 8})
		if err != nil {
			t.Fatal(err)
		}
		fits[p] = m
		if m.Invalid != 1 || !math.IsNaN(m.OOF[0]) {
			t.Errorf("%v: invalid %d, OOF[0] %v; want 1 and NaN", p, m.Invalid, m.OOF[0])
		}
	}
	if ties < 300 {
		t.Fatalf("fixture has %d ties", ties)
	}
	if fits[TiesDropped].DroppedTies != ties || fits[TiesDropped].Rows != len(y)-1-ties || fits[TiesAsLosses].Rows != len(y)-1 || fits[TiesHalf].Rows != len(y)-1 {
		t.Errorf("rows: losses %d half %d dropped %d (dropped ties %d of %d)", fits[TiesAsLosses].Rows, fits[TiesHalf].Rows, fits[TiesDropped].Rows, fits[TiesDropped].DroppedTies, ties)
	}
	a, h, d := fits[TiesAsLosses].Intercept, fits[TiesHalf].Intercept, fits[TiesDropped].Intercept
	if !(a < h && h < d) {
		t.Errorf("intercepts: losses %.3f, half %.3f, dropped %.3f; want increasing", a, h, d)
	}
}

func l1Equal(a, b L1Model) bool {
	eq := func(x, y []float64) bool {
		return slices.EqualFunc(x, y, func(p, q float64) bool { return p == q || (math.IsNaN(p) && math.IsNaN(q)) })
	}
	return a.Intercept == b.Intercept && a.Lambda == b.Lambda && a.LambdaIndex == b.LambdaIndex &&
		eq(a.Coef, b.Coef) && eq(a.OOF, b.OOF) && slices.Equal(a.CV, b.CV) && a.C == b.C
}

func TestL1Deterministic(t *testing.T) {
	w := defaultSparse()
	w.n = 1200
	X, y, _ := w.rows()
	a, err := FitL1Logistic(X, y, L1Options{Seed: 5, PathLength: 8})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := FitL1Logistic(X, y, L1Options{Seed: 5, PathLength: 8})
	if !l1Equal(a, b) {
		t.Error("same seed, different models")
	}
	c, _ := FitL1Logistic(X, y, L1Options{Seed: 6, PathLength: 8})
	if slices.Equal(a.CV, c.CV) {
		t.Error("seeds 5 and 6 gave the same cross-validation")
	}
}

func TestL1Folds(t *testing.T) {
	w := defaultSparse()
	w.n, w.convs = 1000, 180
	X, y, groups := w.rows()

	// Stratified: each outcome is spread over the folds as evenly as
	// possible.
	ds, _ := newL1Data(X, y, L1Options{Folds: 5})
	folds, err := ds.folds(L1Options{Folds: 5, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []Outcome{AWins, BWins, Tie} {
		var per [5]int
		for i, r := range ds.rows {
			if r.outcome == o {
				per[folds[i]]++
			}
		}
		if slices.Max(per[:])-slices.Min(per[:]) > 1 {
			t.Errorf("outcome %v per fold %v", o, per)
		}
	}

	// Grouped: a conversation never spans two folds.
	opt := L1Options{Folds: 5, Seed: 2, Groups: groups}
	ds, _ = newL1Data(X, y, opt)
	folds, err = ds.folds(opt)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i, g := range ds.groups {
		if f, ok := seen[g]; ok && f != folds[i] {
			t.Fatalf("group %s in folds %d and %d", g, f, folds[i])
		}
		seen[g] = folds[i]
	}
	if _, err := FitL1Logistic(X, y, opt); err != nil {
		t.Errorf("grouped fit: %v", err)
	}
}

func TestL1RawCoefMatchesProb(t *testing.T) {
	X, y, _ := defaultSparse().rows()
	m, err := FitL1Logistic(X[:800], y[:800], L1Options{Seed: 1, Metric: MetricLogLoss})
	if err != nil {
		t.Fatal(err)
	}
	b0, b := m.RawCoef()
	for _, x := range X[800:820] {
		eta := b0
		for j, v := range x {
			eta += b[j] * v
		}
		if got, want := lcRate(eta), m.Prob(x); math.Abs(got-want) > 1e-12 {
			t.Errorf("raw coefficients give %v, Prob %v", got, want)
		}
	}
}

func TestL1Errors(t *testing.T) {
	X, y, groups := defaultSparse().rows()
	X, y, groups = X[:50], y[:50], groups[:50]
	allLoss := make([]Outcome, len(y))
	for i := range allLoss {
		allLoss[i] = BWins
	}
	ragged := slices.Clone(X)
	ragged[3] = []float64{1, 2}
	nan := slices.Clone(X)
	nan[4] = slices.Clone(X[4])
	nan[4][1] = math.NaN()
	tests := []struct {
		name string
		X    [][]float64
		y    []Outcome
		opt  L1Options
		want string
	}{
		{"lengths differ", X, y[:10], L1Options{}, "50 feature rows but 10 outcomes"},
		{"groups length", X, y, L1Options{Groups: groups[:3]}, "3 groups"},
		{"ragged", ragged, y, L1Options{}, "row 3 has 2 features"},
		{"NaN", nan, y, L1Options{}, "row 4 feature 1 is NaN"},
		{"empty", nil, nil, L1Options{}, "no rows"},
		{"one class", X, allLoss, L1Options{}, "only one class"},
		{"too few rows", X[:3], y[:3], L1Options{}, "3 rows for 5 folds"},
		{"too few groups", X, y, L1Options{Groups: slices.Repeat([]string{"a", "b"}, 25)}, "2 groups for 5 folds"},
		{"one fold", X, y, L1Options{Folds: 1}, "need at least 2"},
		{"bad lambda", X, y, L1Options{Lambdas: []float64{0.1, -1}}, "not a positive number"},
		{"bad ties", X, y, L1Options{Ties: 7}, "tie policy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FitL1Logistic(tt.X, tt.y, tt.opt)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

// A fixed grid is used as given (strongest first) and the chosen strength
// is one of it.
func TestL1GivenLambdas(t *testing.T) {
	X, y, _ := defaultSparse().rows()
	grid := []float64{0.001, 0.1, 0.01}
	m, err := FitL1Logistic(X[:1000], y[:1000], L1Options{Lambdas: grid, Metric: MetricLogLoss})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.CV) != 3 || m.CV[0].Lambda != 0.1 || m.CV[2].Lambda != 0.001 || !slices.Contains(grid, m.Lambda) {
		t.Errorf("CV grid %+v, chosen %v", m.CV, m.Lambda)
	}
	if m.CV[0].NonZero > m.CV[2].NonZero {
		t.Errorf("stronger penalty kept more features: %+v", m.CV)
	}
}

func BenchmarkL1CV(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			w := defaultSparse()
			w.n = n
			w.beta, w.mean, w.sd = w.beta[:5], w.mean[:5], w.sd[:5]
			X, y, _ := w.rows()
			var m L1Model
			for b.Loop() {
				var err error
				if m, err = FitL1Logistic(X, y, L1Options{Seed: 1}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/fit")
			b.Logf("n %d × 5 features, 5 folds × %d strengths: λ %.5f coef %.3f", n, len(m.CV), m.Lambda, m.Coef)
		})
	}
}

// The fold fits FitL1Logistic returns give each row its OOF probability:
// the fit that held the row out scores it.
func TestL1FoldFitsReproduceOOF(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var X [][]float64
	var y []Outcome
	var groups []string
	for i := range 120 {
		x := []float64{rng.NormFloat64(), rng.NormFloat64()}
		o := BWins
		if x[0]+0.3*rng.NormFloat64() > 0 {
			o = AWins
		}
		X, y, groups = append(X, x), append(y, o), append(groups, fmt.Sprintf("g%d", i/4))
	}
	m, err := FitL1Logistic(X, y, L1Options{Folds: 5, Seed: 3, Groups: groups})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.FoldFits) != 5 || len(m.RowFold) != len(X) {
		t.Fatalf("%d fold fits, %d row folds", len(m.FoldFits), len(m.RowFold))
	}
	for i, x := range X {
		f := m.FoldFits[m.RowFold[i]]
		eta := f.Intercept
		for j, v := range x {
			eta += f.Coef[j] * (v - f.Mean[j]) / f.Scale[j]
		}
		if p := 1 / (1 + math.Exp(-eta)); math.Abs(p-m.OOF[i]) > 1e-12 {
			t.Fatalf("row %d: fold fit gives %v, OOF %v", i, p, m.OOF[i])
		}
		if i > 0 && groups[i] == groups[i-1] && m.RowFold[i] != m.RowFold[i-1] {
			t.Fatalf("group %s in two folds", groups[i])
		}
	}
}
