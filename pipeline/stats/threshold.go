package stats

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// The adaptive policy keeps full context on a turn iff its score
// S = P̂(fc wins) − λ·Δ is at least τ. These helpers choose τ from a set
// of scores: for a share of turns to keep, or for the best agreement with
// the judge's verdicts. Scores should be held out (L1Model.OOF, minus the
// cost term), or the threshold fits noise.

// TauForShare returns the largest τ at which "keep iff score ≥ τ" keeps at
// least a share of the scores (share in [0, 1]), and the share it keeps,
// which exceeds share only when scores tie at τ. share 0 gives +Inf (keep
// none). NaN scores are an error.
func TauForShare(scores []float64, share float64) (tau, kept float64, err error) {
	if !(share >= 0 && share <= 1) {
		return 0, 0, fmt.Errorf("stats: choosing a threshold: share %v is not in [0, 1]", share)
	}
	if len(scores) == 0 {
		return 0, 0, errors.New("stats: choosing a threshold: no scores")
	}
	s := slices.Clone(scores)
	for i, v := range s {
		if math.IsNaN(v) {
			return 0, 0, fmt.Errorf("stats: choosing a threshold: score %d is NaN", i)
		}
	}
	slices.SortFunc(s, func(a, b float64) int { return -cmpFloat(a, b) })
	m := int(math.Ceil(share * float64(len(s))))
	if m == 0 {
		return math.Inf(1), 0, nil
	}
	tau = s[m-1]
	for m < len(s) && s[m] == tau {
		m++
	}
	return tau, float64(m) / float64(len(s)), nil
}

// BestTau returns the τ whose rule "positive (keep fc) iff score ≥ τ" best
// predicts y (AWins positive, ties by ties, rows weighted as in
// FitL1Logistic but without class weights) under metric, and the metric's
// value there. Candidates are +Inf (keep none) and every distinct score;
// among equally good ones the largest τ wins, keeping full context on the
// fewest turns. MetricLogLoss does not apply to a threshold and is an
// error, as are NaN scores, lengths that differ, and no usable row.
func BestTau(scores []float64, y []Outcome, ties TiePolicy, metric CVMetric) (tau, value float64, err error) {
	if len(scores) != len(y) {
		return 0, 0, fmt.Errorf("stats: choosing a threshold: %d scores but %d outcomes", len(scores), len(y))
	}
	if metric == MetricLogLoss || metric > MetricLogLoss {
		return 0, 0, fmt.Errorf("stats: choosing a threshold: metric %v does not apply to a threshold", metric)
	}
	if !ties.valid() {
		return 0, 0, fmt.Errorf("stats: choosing a threshold: unknown tie policy %d", ties)
	}
	ds := &l1Data{ties: ties}
	type row struct{ s, pos, neg float64 }
	var rows []row
	var c confusion // everything predicted negative to start
	for i, o := range y {
		if math.IsNaN(scores[i]) {
			return 0, 0, fmt.Errorf("stats: choosing a threshold: score %d is NaN", i)
		}
		if !o.Valid() || (o == Tie && ties == TiesDropped) {
			continue
		}
		r := row{s: scores[i]}
		ys, ws := ds.targets(o)
		for k := range ys {
			if ys[k] == 1 {
				r.pos += ws[k]
			} else {
				r.neg += ws[k]
			}
		}
		c.fn += r.pos
		c.tn += r.neg
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return 0, 0, errors.New("stats: choosing a threshold: no rows with a usable outcome")
	}
	slices.SortFunc(rows, func(a, b row) int { return -cmpFloat(a.s, b.s) })
	tau, value = math.Inf(1), c.metric(metric)
	for i := 0; i < len(rows); {
		// Lower τ to rows[i].s: every row with that score turns positive.
		s := rows[i].s
		for ; i < len(rows) && rows[i].s == s; i++ {
			c.tp += rows[i].pos
			c.fn -= rows[i].pos
			c.fp += rows[i].neg
			c.tn -= rows[i].neg
		}
		if v := c.metric(metric); v > value {
			tau, value = s, v
		}
	}
	return tau, value, nil
}
