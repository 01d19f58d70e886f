package stats

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// ClassWeights says how the two classes are weighted in FitL1Logistic.
type ClassWeights uint8

const (
	// BalancedClasses gives each class the same total weight, as
	// scikit-learn's class_weight="balanced" (Huang et al.'s choice): a
	// row of class c is weighted W/(2·W_c), W_c the total sample weight of
	// class c in the rows being fitted and W that of both.
	BalancedClasses ClassWeights = iota
	// UnweightedClasses weights every row by its sample weight only.
	UnweightedClasses
)

// String returns "balanced" or "none".
func (c ClassWeights) String() string {
	switch c {
	case BalancedClasses:
		return "balanced"
	case UnweightedClasses:
		return "none"
	}
	return fmt.Sprintf("ClassWeights(%d)", uint8(c))
}

// CVMetric is the held-out score that chooses the regularisation strength
// (and, for BestTau, the threshold).
type CVMetric uint8

const (
	// MetricF1 is the F1 score of the positive class (fc wins), Huang et
	// al.'s choice.
	MetricF1 CVMetric = iota
	// MetricAccuracy is the share of rows whose class is predicted.
	MetricAccuracy
	// MetricBalancedAccuracy is the mean of the two classes' recalls.
	MetricBalancedAccuracy
	// MetricLogLoss is the mean negative log-likelihood (lower is
	// better). Not usable with BestTau, which only sees scores.
	MetricLogLoss
)

// String returns "f1", "accuracy", "balanced_accuracy" or "log_loss".
func (m CVMetric) String() string {
	switch m {
	case MetricF1:
		return "f1"
	case MetricAccuracy:
		return "accuracy"
	case MetricBalancedAccuracy:
		return "balanced_accuracy"
	case MetricLogLoss:
		return "log_loss"
	}
	return fmt.Sprintf("CVMetric(%d)", uint8(m))
}

// Defaults of L1Options.
const (
	DefaultL1Folds      = 5
	DefaultL1PathLength = 20
	DefaultL1PathRatio  = 1e-4
)

// L1Options configures FitL1Logistic. The zero value follows Huang et al.:
// ties as losses, balanced classes, 5 folds, F1 chooses λ.
type L1Options struct {
	Ties    TiePolicy
	Classes ClassWeights
	Metric  CVMetric
	Folds   int // default DefaultL1Folds; at least 2

	// Lambdas is the grid of strengths to cross-validate (positive). When
	// empty it is PathLength values spaced evenly in log scale from
	// λ_max, the smallest strength that zeroes every coefficient on the
	// whole data, down to λ_max·PathRatio.
	Lambdas    []float64
	PathLength int     // default DefaultL1PathLength
	PathRatio  float64 // default DefaultL1PathRatio; in (0, 1)

	// OneSE picks the strongest penalty whose mean score is within one
	// standard error (SD/√Folds) of the best, glmnet's lambda.1se, instead
	// of the best score itself. Scores are often flat near their best, and
	// the rule then drops features that help by noise only. Off by default,
	// as in Huang et al.
	OneSE bool

	Seed uint64 // fold assignment; 0 is a valid seed

	// Groups, when set, holds one key per row (e.g. the conversation id):
	// rows with the same key always fall in the same fold, so turns of one
	// conversation never sit on both sides of a split. Without it folds
	// are stratified by outcome.
	Groups []string
}

func (o L1Options) withDefaults() L1Options {
	if o.Folds == 0 {
		o.Folds = DefaultL1Folds
	}
	if o.PathLength <= 0 {
		o.PathLength = DefaultL1PathLength
	}
	if o.PathRatio <= 0 || o.PathRatio >= 1 {
		o.PathRatio = DefaultL1PathRatio
	}
	return o
}

// CVPoint is the cross-validated score of one strength: each metric is
// computed on each held-out fold (rows weighted by their sample weight,
// not by class weights) and averaged over folds, as scikit-learn's search
// does; SD is the standard deviation over folds of the selection metric
// (population form, as scikit-learn's std_test_score).
type CVPoint struct {
	Lambda           float64
	Accuracy         float64
	BalancedAccuracy float64
	F1               float64
	LogLoss          float64
	SD               float64
	NonZero          float64 // mean number of non-zero coefficients over the folds' fits
}

// L1Model is a fitted L1-regularised logistic regression of "A wins" on
// the features (for the adaptive policy: fc wins over ao), with the
// cross-validation that chose its strength.
type L1Model struct {
	// Intercept and Coef are on standardised features
	// z_j = (x_j − Mean[j]) / Scale[j]. A coefficient the penalty removed
	// is exactly 0.
	Intercept float64
	Coef      []float64
	Mean      []float64
	Scale     []float64 // population standard deviation; 1 for a constant feature

	Lambda      float64   // chosen strength
	LambdaIndex int       // index of Lambda in CV
	CV          []CVPoint // one per strength, strongest first
	// C is scikit-learn's equivalent inverse strength for the final fit,
	// 1/(λ·Σ row weights), for comparing with a LogisticRegression(C=...)
	// fitted on the same standardised features.
	C float64

	Metric  CVMetric
	OneSE   bool
	Ties    TiePolicy
	Classes ClassWeights
	Folds   int
	Seed    uint64

	Rows        int        // input rows fitted
	Invalid     int        // rows skipped: outcome not valid
	DroppedTies int        // rows skipped: ties under TiesDropped
	ClassWeight [2]float64 // weight of a negative and of a positive row in the final fit

	// OOF is each input row's held-out probability at the chosen
	// strength, from the fold fit that did not see it (NaN for skipped
	// rows): choose a threshold on it (BestTau) rather than on in-sample
	// probabilities.
	OOF []float64
	// FoldFits are the fold fits at the chosen strength, and RowFold the
	// fold each input row was held out in (-1 for skipped rows): with
	// Groups, a group's rows are scored by the fit that did not see the
	// group (cross-fitting).
	FoldFits []L1Fold
	RowFold  []int
}

// L1Fold is one fold's fit at the chosen strength, on its own
// standardisation.
type L1Fold struct {
	Intercept   float64
	Coef        []float64
	Mean, Scale []float64
}

// CVScore is the cross-validated score at the chosen strength.
func (m *L1Model) CVScore() CVPoint { return m.CV[m.LambdaIndex] }

// Prob is the predicted probability that A wins for raw features x, NaN
// when x does not have one value per coefficient.
func (m *L1Model) Prob(x []float64) float64 {
	if len(x) != len(m.Coef) {
		return math.NaN()
	}
	eta := m.Intercept
	for j, v := range x {
		eta += m.Coef[j] * (v - m.Mean[j]) / m.Scale[j]
	}
	return lcRate(eta)
}

// RawCoef returns the intercept and coefficients on the raw (not
// standardised) features: Prob(x) = σ(intercept + Σ coef_j·x_j).
func (m *L1Model) RawCoef() (intercept float64, coef []float64) {
	intercept = m.Intercept
	coef = make([]float64, len(m.Coef))
	for j, c := range m.Coef {
		coef[j] = c / m.Scale[j]
		intercept -= coef[j] * m.Mean[j]
	}
	return intercept, coef
}

// FitL1Logistic fits an L1-regularised logistic regression of y (AWins is
// the positive class; ties by opt.Ties) on the rows of X, choosing the
// strength by k-fold cross-validation, and refits on all rows at the
// chosen strength.
//
// Each fit minimises
//
//	Σ_i w_i·logloss_i / Σ_i w_i + λ·Σ_j |β_j|
//
// over the intercept (not penalised) and β, on features standardised with
// the mean and population standard deviation of the rows being fitted
// (each training fold its own). w_i is the row's sample weight (1, or 1/2
// for each half of a tie under TiesHalf) times its class weight. In
// scikit-learn's terms this is LogisticRegression(penalty="l1",
// C=1/(λ·Σ w_i)) on standardised features with an unpenalised intercept.
// The solver is a proximal Newton method: each outer step fits a weighted
// least-squares approximation by cyclic coordinate descent with soft
// thresholding (as glmnet does), then a step-halving line search keeps
// the objective decreasing. The strengths are visited from strongest to
// weakest, each fit starting from the previous one.
//
// Folds: with opt.Groups, distinct keys are sorted, shuffled by a PCG
// seeded with opt.Seed and dealt to folds in turn; without, the rows of
// each outcome (A wins, B wins, tie) are shuffled by the same generator and
// dealt in turn. The same rows, options and seed give the same model bit
// for bit. The strength with the best mean held-out metric wins; equal
// scores go to the stronger penalty (fewer features).
//
// Rows with an invalid outcome are skipped and counted. Errors: X and y
// (and Groups) of different lengths, rows of different widths or with
// non-finite values, fewer rows or groups than folds, a class missing
// from the data or from a training fold, bad options.
func FitL1Logistic(X [][]float64, y []Outcome, opt L1Options) (L1Model, error) {
	opt = opt.withDefaults()
	ds, err := newL1Data(X, y, opt)
	if err != nil {
		return L1Model{}, fmt.Errorf("stats: fitting L1 logistic regression: %w", err)
	}
	folds, err := ds.folds(opt)
	if err != nil {
		return L1Model{}, fmt.Errorf("stats: fitting L1 logistic regression: %w", err)
	}

	all := make([]bool, len(ds.rows))
	for i := range all {
		all[i] = true
	}
	full, err := ds.problem(all, opt.Classes)
	if err != nil {
		return L1Model{}, fmt.Errorf("stats: fitting L1 logistic regression: %w", err)
	}
	lambdas := slices.Clone(opt.Lambdas)
	if len(lambdas) == 0 {
		lambdas = full.path(opt.PathLength, opt.PathRatio)
	}
	for _, l := range lambdas {
		if !(l > 0) || math.IsInf(l, 0) {
			return L1Model{}, fmt.Errorf("stats: fitting L1 logistic regression: strength %v is not a positive number", l)
		}
	}
	slices.SortFunc(lambdas, func(a, b float64) int { return -cmpFloat(a, b) })

	// Cross-validation: per fold, the path of fits and the held-out
	// metrics of each strength.
	d := ds.d
	scores := make([][][4]float64, opt.Folds) // [fold][lambda][CVMetric]
	nonzero := make([]float64, len(lambdas))
	coefs := make([][][]float64, opt.Folds) // [fold][lambda] intercept then β
	stdz := make([]l1Scaling, opt.Folds)    // each fold's standardisation, for OOF
	for f := range opt.Folds {
		train := make([]bool, len(ds.rows))
		for i, fi := range folds {
			train[i] = fi != f
		}
		p, err := ds.problem(train, opt.Classes)
		if err != nil {
			return L1Model{}, fmt.Errorf("stats: fitting L1 logistic regression: fold %d: %w", f+1, err)
		}
		stdz[f] = p.l1Scaling
		beta := p.start()
		coefs[f] = make([][]float64, len(lambdas))
		scores[f] = make([][4]float64, len(lambdas))
		for li, l := range lambdas {
			p.solve(l, beta)
			coefs[f][li] = slices.Clone(beta)
			for _, b := range beta[1:] {
				if b != 0 {
					nonzero[li]++
				}
			}
			scores[f][li] = ds.heldOut(folds, f, p, beta)
		}
	}

	m := L1Model{
		Metric: opt.Metric, OneSE: opt.OneSE, Ties: opt.Ties, Classes: opt.Classes, Folds: opt.Folds, Seed: opt.Seed,
		Rows: len(ds.rows), Invalid: ds.invalid, DroppedTies: ds.dropped,
	}
	m.CV = make([]CVPoint, len(lambdas))
	sel := opt.Metric
	for li, l := range lambdas {
		var sum [4]float64
		for f := range opt.Folds {
			for k := range sum {
				sum[k] += scores[f][li][k]
			}
		}
		k := float64(opt.Folds)
		cp := CVPoint{
			Lambda: l, NonZero: nonzero[li] / k,
			Accuracy: sum[MetricAccuracy] / k, BalancedAccuracy: sum[MetricBalancedAccuracy] / k,
			F1: sum[MetricF1] / k, LogLoss: sum[MetricLogLoss] / k,
		}
		var ss float64
		mean := sum[sel] / k
		for f := range opt.Folds {
			e := scores[f][li][sel] - mean
			ss += e * e
		}
		cp.SD = math.Sqrt(ss / k)
		m.CV[li] = cp
		if li == 0 || better(opt.Metric, mean, cvValue(m.CV[m.LambdaIndex], opt.Metric)) {
			m.LambdaIndex = li
		}
	}
	if opt.OneSE {
		best := m.CV[m.LambdaIndex]
		se := best.SD / math.Sqrt(float64(opt.Folds))
		bound := cvValue(best, opt.Metric) - se
		if opt.Metric == MetricLogLoss {
			bound = cvValue(best, opt.Metric) + se
		}
		for li, cp := range m.CV[:m.LambdaIndex] {
			if v := cvValue(cp, opt.Metric); v == bound || better(opt.Metric, v, bound) {
				m.LambdaIndex = li
				break
			}
		}
	}
	m.Lambda = lambdas[m.LambdaIndex]

	beta := full.start()
	for _, l := range lambdas[:m.LambdaIndex+1] {
		full.solve(l, beta)
	}
	m.Intercept, m.Coef = beta[0], slices.Clone(beta[1:])
	m.Mean, m.Scale = slices.Clone(full.mean), slices.Clone(full.scale)
	m.C = 1 / (m.Lambda * full.wsum)
	m.ClassWeight = full.classWeight

	m.OOF = make([]float64, len(X))
	m.RowFold = make([]int, len(X))
	for i := range m.OOF {
		m.OOF[i], m.RowFold[i] = math.NaN(), -1
	}
	for i, r := range ds.rows {
		f := folds[i]
		m.OOF[r.index] = stdz[f].prob(ds.x[i*d:(i+1)*d], coefs[f][m.LambdaIndex])
		m.RowFold[r.index] = f
	}
	m.FoldFits = make([]L1Fold, opt.Folds)
	for f := range opt.Folds {
		b := coefs[f][m.LambdaIndex]
		m.FoldFits[f] = L1Fold{Intercept: b[0], Coef: slices.Clone(b[1:]), Mean: slices.Clone(stdz[f].mean), Scale: slices.Clone(stdz[f].scale)}
	}
	return m, nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cvValue(p CVPoint, m CVMetric) float64 {
	switch m {
	case MetricAccuracy:
		return p.Accuracy
	case MetricBalancedAccuracy:
		return p.BalancedAccuracy
	case MetricLogLoss:
		return p.LogLoss
	}
	return p.F1
}

// better reports whether a is strictly better than b under m.
func better(m CVMetric, a, b float64) bool {
	if m == MetricLogLoss {
		return a < b
	}
	return a > b
}

// l1Row is one kept input row: its index in X and its outcome.
type l1Row struct {
	index   int
	outcome Outcome
}

// l1Data holds the kept rows' features (row-major, d per row) and outcomes.
type l1Data struct {
	d       int
	x       []float64
	rows    []l1Row
	groups  []string // per kept row, when folds are by group
	ties    TiePolicy
	invalid int
	dropped int
}

func newL1Data(X [][]float64, y []Outcome, opt L1Options) (*l1Data, error) {
	if len(X) != len(y) {
		return nil, fmt.Errorf("%d feature rows but %d outcomes", len(X), len(y))
	}
	if opt.Groups != nil && len(opt.Groups) != len(X) {
		return nil, fmt.Errorf("%d feature rows but %d groups", len(X), len(opt.Groups))
	}
	if !opt.Ties.valid() {
		return nil, fmt.Errorf("unknown tie policy %d", opt.Ties)
	}
	if opt.Classes > UnweightedClasses {
		return nil, fmt.Errorf("unknown class weighting %d", opt.Classes)
	}
	if opt.Metric > MetricLogLoss {
		return nil, fmt.Errorf("unknown metric %d", opt.Metric)
	}
	if opt.Folds < 2 {
		return nil, fmt.Errorf("%d folds: need at least 2", opt.Folds)
	}
	if len(X) == 0 {
		return nil, errors.New("no rows")
	}
	ds := &l1Data{d: len(X[0]), ties: opt.Ties}
	if ds.d == 0 {
		return nil, errors.New("rows have no features")
	}
	for i, row := range X {
		if len(row) != ds.d {
			return nil, fmt.Errorf("row %d has %d features, row 0 has %d", i, len(row), ds.d)
		}
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("row %d feature %d is %v", i, j, v)
			}
		}
		switch {
		case !y[i].Valid():
			ds.invalid++
			continue
		case y[i] == Tie && opt.Ties == TiesDropped:
			ds.dropped++
			continue
		}
		ds.rows = append(ds.rows, l1Row{index: i, outcome: y[i]})
		ds.x = append(ds.x, row...)
		if opt.Groups != nil {
			ds.groups = append(ds.groups, opt.Groups[i])
		}
	}
	return ds, nil
}

// targets returns the (class, sample weight) rows an outcome becomes.
func (ds *l1Data) targets(o Outcome) (ys, ws []float64) {
	switch {
	case o == AWins:
		return []float64{1}, []float64{1}
	case o == Tie && ds.ties == TiesHalf:
		return []float64{1, 0}, []float64{0.5, 0.5}
	}
	return []float64{0}, []float64{1}
}

// folds assigns each kept row to a fold (see FitL1Logistic).
func (ds *l1Data) folds(opt L1Options) ([]int, error) {
	k := opt.Folds
	src := rand.NewPCG(opt.Seed, 0)
	shuffle := func(n int, swap func(i, j int)) {
		for i := n - 1; i > 0; i-- {
			swap(i, int(boundedDraw(src, uint64(i+1))))
		}
	}
	out := make([]int, len(ds.rows))
	if ds.groups != nil {
		keys := slices.Clone(ds.groups)
		slices.Sort(keys)
		keys = slices.Compact(keys)
		if len(keys) < k {
			return nil, fmt.Errorf("%d groups for %d folds", len(keys), k)
		}
		shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		fold := make(map[string]int, len(keys))
		for i, key := range keys {
			fold[key] = i % k
		}
		for i, g := range ds.groups {
			out[i] = fold[g]
		}
		return out, nil
	}
	if len(ds.rows) < k {
		return nil, fmt.Errorf("%d rows for %d folds", len(ds.rows), k)
	}
	next := 0
	for _, o := range []Outcome{AWins, BWins, Tie} {
		var idx []int
		for i, r := range ds.rows {
			if r.outcome == o {
				idx = append(idx, i)
			}
		}
		shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		for _, i := range idx {
			out[i] = next % k
			next++
		}
	}
	return out, nil
}

// l1Scaling is a fit's standardisation of the raw features.
type l1Scaling struct{ mean, scale []float64 }

// prob is the probability of the fit beta for raw features x.
//
//go:norace
func (s l1Scaling) prob(x, beta []float64) float64 {
	eta := beta[0]
	for j, v := range x {
		eta += beta[j+1] * (v - s.mean[j]) / s.scale[j]
	}
	return lcRate(eta)
}

// l1Problem is one fit's data: standardised features by column over the
// expanded rows (a TiesHalf tie gives two), classes and normalised weights.
type l1Problem struct {
	d int
	l1Scaling
	z           [][]float64 // z[j][i]
	y, w        []float64   // Σ w = 1
	wsum        float64     // Σ of the weights before normalising
	classWeight [2]float64
	// State of the last fit: η, σ(η) and the loss at the coefficients cur.
	eta, pr []float64
	loss    float64
	cur     []float64
	// scratch
	etaC, prC, e, de, v []float64
	a                   []float64 // Σ v·z_j² of each feature, per outer step
}

// problem builds the fit over the kept rows with in[i] set.
func (ds *l1Data) problem(in []bool, cw ClassWeights) (*l1Problem, error) {
	d := ds.d
	p := &l1Problem{d: d, l1Scaling: l1Scaling{mean: make([]float64, d), scale: make([]float64, d)}, z: make([][]float64, d)}
	var nRows float64
	for i := range ds.rows {
		if !in[i] {
			continue
		}
		nRows++
		for j := range d {
			p.mean[j] += ds.x[i*d+j]
		}
	}
	for j := range d {
		p.mean[j] /= nRows
	}
	for i := range ds.rows {
		if !in[i] {
			continue
		}
		for j := range d {
			e := ds.x[i*d+j] - p.mean[j]
			p.scale[j] += e * e
		}
	}
	for j := range d {
		p.scale[j] = math.Sqrt(p.scale[j] / nRows)
		if p.scale[j] == 0 {
			p.scale[j] = 1
		}
	}
	var classW [2]float64
	var rowsOf []int
	for i, r := range ds.rows {
		if !in[i] {
			continue
		}
		ys, ws := ds.targets(r.outcome)
		for k := range ys {
			p.y = append(p.y, ys[k])
			p.w = append(p.w, ws[k])
			classW[int(ys[k])] += ws[k]
			rowsOf = append(rowsOf, i)
		}
	}
	if classW[0] == 0 || classW[1] == 0 {
		return nil, fmt.Errorf("only one class in the rows fitted (%g rows where A won, %g where it did not)", classW[1], classW[0])
	}
	p.classWeight = [2]float64{1, 1}
	if cw == BalancedClasses {
		tot := classW[0] + classW[1]
		p.classWeight = [2]float64{tot / (2 * classW[0]), tot / (2 * classW[1])}
	}
	for i := range p.w {
		p.w[i] *= p.classWeight[int(p.y[i])]
		p.wsum += p.w[i]
	}
	for i := range p.w {
		p.w[i] /= p.wsum
	}
	m := len(p.y)
	for j := range d {
		col := make([]float64, m)
		for i, r := range rowsOf {
			col[i] = (ds.x[r*d+j] - p.mean[j]) / p.scale[j]
		}
		p.z[j] = col
	}
	for _, b := range []*[]float64{&p.eta, &p.pr, &p.etaC, &p.prC, &p.e, &p.de, &p.v} {
		*b = make([]float64, m)
	}
	p.a = make([]float64, d)
	return p, nil
}

// start is the all-zero fit: intercept at the weighted log-odds.
func (p *l1Problem) start() []float64 {
	beta := make([]float64, p.d+1)
	var ybar float64
	for i, y := range p.y {
		ybar += p.w[i] * y
	}
	beta[0] = math.Log(ybar / (1 - ybar))
	return beta
}

// path is the default grid: n strengths from λ_max down to λ_max·ratio.
func (p *l1Problem) path(n int, ratio float64) []float64 {
	beta := p.start()
	ybar := lcRate(beta[0])
	var lmax float64
	for j := range p.d {
		var g float64
		for i, z := range p.z[j] {
			g += p.w[i] * (p.y[i] - ybar) * z
		}
		lmax = max(lmax, math.Abs(g))
	}
	if lmax == 0 {
		lmax = 1 // no feature varies: every strength gives the same fit
	}
	out := make([]float64, n)
	for k := range out {
		if n == 1 {
			out[k] = lmax
			continue
		}
		out[k] = lmax * math.Pow(ratio, float64(k)/float64(n-1))
	}
	return out
}

// setBeta computes η and the weighted log loss at beta and remembers beta
// as the point they belong to.
//
//go:norace
func (p *l1Problem) setBeta(beta []float64) {
	for i := range p.eta {
		p.eta[i] = beta[0]
	}
	for j, col := range p.z {
		b := beta[j+1]
		if b == 0 {
			continue
		}
		for i, z := range col {
			p.eta[i] += b * z
		}
	}
	p.loss = p.lossAt(p.eta, p.pr)
	p.cur = append(p.cur[:0], beta...)
}

// lossAt is the weighted log loss Σ w·(softplus(η) − y·η); it leaves σ(η)
// in pr, which the next Newton step needs, so each row costs one exp and
// one log1p.
//
//go:norace
func (p *l1Problem) lossAt(eta, pr []float64) float64 {
	var loss float64
	for i, t := range eta {
		e := math.Exp(-math.Abs(t))
		sp := math.Log1p(e) // softplus(t) − max(t, 0)
		if t > 0 {
			sp += t
			pr[i] = 1 / (1 + e)
		} else {
			pr[i] = e / (1 + e)
		}
		loss += p.w[i] * (sp - p.y[i]*t)
	}
	return loss
}

func l1Norm(beta []float64) float64 {
	var s float64
	for _, b := range beta[1:] {
		s += math.Abs(b)
	}
	return s
}

// objective returns the penalised loss at beta and leaves η in p.eta.
//
//go:norace
func (p *l1Problem) objective(lambda float64, beta []float64) float64 {
	p.setBeta(beta)
	return p.loss + lambda*l1Norm(beta)
}

const (
	l1MaxOuter = 100
	l1MaxInner = 1000
	l1InnerTol = 1e-14 // on the change of the quadratic model's objective
	l1OuterTol = 1e-9  // on the largest coefficient change
)

// go:norace (below): the solver's loops run on one goroutine over arrays
// private to one fit; instrumenting their every access made the fits
// twenty times slower under -race with nothing to find.
//
// solve minimises the objective at lambda starting from beta, which it
// overwrites with the solution. η and the loss are carried from one call
// to the next (the path's warm start) and updated along each step rather
// than recomputed from the features.
//
//go:norace
func (p *l1Problem) solve(lambda float64, beta []float64) {
	if !slices.Equal(p.cur, beta) {
		p.setBeta(beta)
	}
	f := p.loss + lambda*l1Norm(beta)
	next := make([]float64, len(beta))
	cand := make([]float64, len(beta))
	for range l1MaxOuter {
		// Quadratic model at beta: weights v = w·p(1−p), and e the
		// residual of the working response, (y − p)/(p(1−p)).
		for i, pr := range p.pr {
			q := max(pr*(1-pr), 1e-5)
			p.v[i] = p.w[i] * q
			p.e[i] = (p.y[i] - pr) / q
		}
		copy(p.de, p.e)
		for j, col := range p.z {
			var a float64
			for i, z := range col {
				a += p.v[i] * z * z
			}
			p.a[j] = a
		}
		copy(next, beta)
		for range l1MaxInner {
			var sv, sve float64
			for i, v := range p.v {
				sv += v
				sve += v * p.e[i]
			}
			delta := sve / sv
			next[0] += delta
			for i := range p.e {
				p.e[i] -= delta
			}
			moved := sv * delta * delta
			for j, col := range p.z {
				a := p.a[j]
				if a == 0 {
					continue
				}
				var g float64
				for i, z := range col {
					g += p.v[i] * z * p.e[i]
				}
				old := next[j+1]
				nb := softThreshold(g+a*old, lambda) / a
				if nb == old {
					continue
				}
				dl := nb - old
				next[j+1] = nb
				for i, z := range col {
					p.e[i] -= dl * z
				}
				moved = max(moved, a*dl*dl)
			}
			if moved < l1InnerTol {
				break
			}
		}
		// The residual fell by exactly the change of η at step 1.
		for i, e := range p.e {
			p.de[i] -= e
		}
		// Line search from beta towards next.
		step := 1.0
		var nf, nloss float64
		for {
			for k := range cand {
				cand[k] = beta[k] + step*(next[k]-beta[k]) // exact 0 at step 1 when next[k] is 0
			}
			for i, eta := range p.eta {
				p.etaC[i] = eta + step*p.de[i]
			}
			nloss = p.lossAt(p.etaC, p.prC)
			nf = nloss + lambda*l1Norm(cand)
			if nf <= f+1e-13*math.Abs(f) || step < 1e-8 {
				break
			}
			step /= 2
		}
		if nf > f+1e-13*math.Abs(f) {
			return // no progress: beta, η and the loss stay as they were
		}
		var change float64
		for k := range beta {
			change = max(change, math.Abs(cand[k]-beta[k]))
		}
		copy(beta, cand)
		p.eta, p.etaC = p.etaC, p.eta
		p.pr, p.prC = p.prC, p.pr
		p.loss = nloss
		p.cur = append(p.cur[:0], beta...)
		f = nf
		if change < l1OuterTol {
			return
		}
	}
}

func softThreshold(g, lambda float64) float64 {
	switch {
	case g > lambda:
		return g - lambda
	case g < -lambda:
		return g + lambda
	}
	return 0
}

// heldOut scores beta (fitted by p) on fold f under each metric, indexed
// by CVMetric, rows weighted by sample weight.
//
//go:norace
func (ds *l1Data) heldOut(folds []int, f int, p *l1Problem, beta []float64) (out [4]float64) {
	var c confusion
	var ll, wsum float64
	d := ds.d
	for i, r := range ds.rows {
		if folds[i] != f {
			continue
		}
		pr := p.prob(ds.x[i*d:(i+1)*d], beta)
		ys, ws := ds.targets(r.outcome)
		for k, y := range ys {
			c.add(pr >= 0.5, y == 1, ws[k])
			lp := math.Log(math.Max(pr, 1e-15))
			lq := math.Log(math.Max(1-pr, 1e-15))
			ll -= ws[k] * (y*lp + (1-y)*lq)
			wsum += ws[k]
		}
	}
	for _, m := range []CVMetric{MetricF1, MetricAccuracy, MetricBalancedAccuracy} {
		out[m] = c.metric(m)
	}
	out[MetricLogLoss] = ll / wsum
	return out
}

// confusion is a weighted confusion matrix.
type confusion struct{ tp, fp, fn, tn float64 }

func (c *confusion) add(predicted, actual bool, w float64) {
	switch {
	case predicted && actual:
		c.tp += w
	case predicted:
		c.fp += w
	case actual:
		c.fn += w
	default:
		c.tn += w
	}
}

// metric returns m of the matrix. F1 with no positives predicted or
// present is 0, as scikit-learn's default zero_division; balanced accuracy
// with one class absent is the other class's recall.
func (c confusion) metric(m CVMetric) float64 {
	switch m {
	case MetricAccuracy:
		return (c.tp + c.tn) / (c.tp + c.fp + c.fn + c.tn)
	case MetricBalancedAccuracy:
		pos, neg := c.tp+c.fn, c.tn+c.fp
		switch {
		case pos == 0:
			return c.tn / neg
		case neg == 0:
			return c.tp / pos
		}
		return (c.tp/pos + c.tn/neg) / 2
	case MetricF1:
		den := 2*c.tp + c.fp + c.fn
		if den == 0 {
			return 0
		}
		return 2 * c.tp / den
	}
	return math.NaN()
}
