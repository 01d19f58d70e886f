package compint_test

import (
	"math"
	"testing"

	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/stages/compint"
)

func TestEffectRetention(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name           string
		comp, lctx, ub float64
		minDen         float64
		want, num, den float64
		defined        bool
	}{
		{"half kept", 0.6, 0.4, 0.8, 0.05, 0.5, 0.2, 0.4, true},
		{"lossless", 0.9, 0.3, 0.9, 0.05, 1, 0.6, 0.6, true},
		{"all lost", 0.3, 0.3, 0.9, 0.05, 0, 0, 0.6, true},
		{"worse than no SC", 0.2, 0.3, 0.9, 0.05, -1.0 / 6, -0.1, 0.6, true},
		{"denominator below the threshold", 0.5, 0.48, 0.5, 0.05, nan, 0.02, 0.02, false},
		{"negative denominator kept when large", 0.4, 0.8, 0.6, 0.05, 2, -0.4, -0.2, true},
		{"zero denominator with no threshold", 0.5, 0.5, 0.5, 0, nan, 0, 0, false},
		{"negative threshold counts as zero", 0.6, 0.4, 0.8, -1, 0.5, 0.2, 0.4, true},
		{"NaN rate", nan, 0.4, 0.8, 0.05, nan, nan, 0.4, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := compint.EffectRetention(tc.comp, tc.lctx, tc.ub, tc.minDen)
			if e.Defined != tc.defined || !near(e.Value, tc.want) || !near(e.Numerator, tc.num) || !near(e.Denominator, tc.den) {
				t.Errorf("got %+v; want value %v (%v/%v), defined %v", e, tc.want, tc.num, tc.den, tc.defined)
			}
		})
	}
}

func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) < 1e-12
}

func TestScore(t *testing.T) {
	yes, no := compint.Choice{Letter: "A", Compliant: true}, compint.Choice{Letter: "A", Compliant: false}
	tests := []struct {
		in         []compint.Choice
		score      float64
		strict, ok bool
	}{
		{nil, 0, false, false},
		{[]compint.Choice{yes}, 1, true, true},
		{[]compint.Choice{no}, 0, false, true},
		{[]compint.Choice{yes, no}, 0.5, false, true},
		{[]compint.Choice{yes, yes}, 1, true, true},
	}
	for _, tc := range tests {
		s, strict, ok := compint.Score(tc.in)
		if s != tc.score || strict != tc.strict || ok != tc.ok {
			t.Errorf("Score(%v) = %v, %v, %v", tc.in, s, strict, ok)
		}
	}
}

func TestNewRate(t *testing.T) {
	r := compint.NewRate(7.5, 10, 0.95)
	iv := stats.Wilson(7.5, 10, 0.95)
	if r.Value != 0.75 || r.Lo != iv.Lo || r.Hi != iv.Hi || r.N != 10 || r.X != 7.5 {
		t.Errorf("rate %+v, Wilson %+v", r, iv)
	}
	if z := compint.NewRate(0, 0, 0.95); !math.IsNaN(z.Value) || !math.IsNaN(z.Lo) {
		t.Errorf("empty rate %+v", z)
	}
}
