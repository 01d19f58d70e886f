package compint

import (
	"math"

	"github.com/ac3/ac3/pipeline/stats"
)

// Score is one instance's compliance in one group: the share of the orders
// it was asked in that were answered compliantly. With one order it is 0
// or 1; with both orders 0, ½ or 1, so a model that always picks the same
// letter scores ½ rather than whatever the layout happened to favour.
// Strict is true only when every order was answered compliantly. It reports
// false when choices is empty.
func Score(choices []Choice) (score float64, strict bool, ok bool) {
	if len(choices) == 0 {
		return 0, false, false
	}
	n := 0
	for _, c := range choices {
		if c.Compliant {
			n++
		}
	}
	return float64(n) / float64(len(choices)), n == len(choices), true
}

// Rate is a proportion with its Wilson interval: compliance (the sum of
// Scores over N instances) or retention (YES verdicts over N).
type Rate struct {
	X     float64 `json:"x"` // successes; may be a half-integer for compliance in both orders
	N     int     `json:"n"`
	Value float64 `json:"value"` // X/N, NaN when N is 0
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
}

// NewRate returns x out of n with the Wilson interval at level (e.g. 0.95)
// from pipeline/stats. The interval treats instances as independent; the
// instances of one stitched context share it, so when few contexts are
// used the interval is too narrow and the report should say so.
func NewRate(x float64, n int, level float64) Rate {
	iv := stats.Wilson(x, n, level)
	v := math.NaN()
	if n > 0 {
		v = x / float64(n)
	}
	return Rate{X: x, N: n, Value: v, Lo: iv.Lo, Hi: iv.Hi}
}

// DefaultMinDenominator is the smallest |c_ub − c_lctx| for which effect
// retention is reported: below five points the bound barely lifts
// compliance over the no-SC baseline, and the ratio is mostly noise.
const DefaultMinDenominator = 0.05

// Effect is effect retention, (c_comp − c_lctx) / (c_ub − c_lctx): how much
// of the compliance that restating the SC buys over the no-SC baseline a
// strategy keeps. 1 is lossless, 0 is as if the SC had never been stated;
// values outside [0, 1] happen and are kept.
type Effect struct {
	Value       float64 `json:"value"` // NaN when not Defined
	Numerator   float64 `json:"numerator"`
	Denominator float64 `json:"denominator"` // shown beside Value so readers see how much it rests on
	Defined     bool    `json:"defined"`     // false when |Denominator| < the threshold, or an input is NaN
}

// EffectRetention computes effect retention from the compliance rates of
// the Compacted, LongNoSC and UpperBound groups over the same instances.
// It is undefined when |ub − lctx| < minDen (pass DefaultMinDenominator
// unless the run config says otherwise; a negative minDen counts as 0) or
// when a rate is NaN.
func EffectRetention(comp, lctx, ub, minDen float64) Effect {
	e := Effect{Numerator: comp - lctx, Denominator: ub - lctx, Value: math.NaN()}
	if math.IsNaN(e.Numerator) || math.IsNaN(e.Denominator) {
		return e
	}
	if math.Abs(e.Denominator) < max(minDen, 0) || e.Denominator == 0 {
		return e
	}
	e.Value, e.Defined = e.Numerator/e.Denominator, true
	return e
}
