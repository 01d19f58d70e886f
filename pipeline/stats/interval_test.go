package stats

import (
	"math"
	"testing"
)

// Wilson references were computed with python3's math module from the
// textbook formula, with z = statistics.NormalDist().inv_cdf(0.975):
//
//	p = x/n; d = 1 + z*z/n; c = (p + z*z/(2*n))/d
//	h = z*sqrt(p*(1-p)/n + z*z/(4*n*n))/d; (c-h, c+h)
//
// statsmodels' proportion_confint(count, nobs, method="wilson") uses the
// same formula with z = norm.ppf(0.975), so proportion_confint(8, 10,
// method="wilson") = (0.4901624..., 0.9433178...), as asserted below.
func TestWilson(t *testing.T) {
	tests := []struct {
		name   string
		x      float64
		n      int
		lo, hi float64
	}{
		{"8/10 (statsmodels reference)", 8, 10, 0.49016247153664183, 0.9433178485456247},
		{"9/10", 9, 10, 0.5958499732047616, 0.982123786904927},
		{"5/10", 5, 10, 0.23659309051256405, 0.763406909487436},
		{"0/10: lower end exactly 0", 0, 10, 0, 0.27753279986288915},
		{"10/10: upper end exactly 1", 10, 10, 0.7224672001371109, 1},
		{"7.5/10: 6 wins 3 ties 1 loss", 7.5, 10, 0.4421814242785499, 0.9190521757900055},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := WilsonZ(tt.x, tt.n, Z95)
			if math.Abs(got.Lo-tt.lo) > 1e-12 || math.Abs(got.Hi-tt.hi) > 1e-12 {
				t.Errorf("WilsonZ(%g, %d) = %+v, want [%.17g, %.17g]", tt.x, tt.n, got, tt.lo, tt.hi)
			}
			if lv := Wilson(tt.x, tt.n, 0.95); lv != got {
				t.Errorf("Wilson(level 0.95) = %+v, WilsonZ(Z95) = %+v", lv, got)
			}
		})
	}
	// The rounded figures from the brief.
	iv := Wilson(8, 10, 0.95)
	if math.Abs(iv.Lo-0.4902) > 1e-4 || math.Abs(iv.Hi-0.9433) > 1e-4 {
		t.Errorf("Wilson(8, 10) = %+v, want about [0.4902, 0.9433]", iv)
	}
}

func TestWilsonNoData(t *testing.T) {
	for _, iv := range []Interval{Wilson(0, 0, 0.95), Wilson(3, 2, 0.95), Wilson(-1, 2, 0.95)} {
		if !math.IsNaN(iv.Lo) || !math.IsNaN(iv.Hi) {
			t.Errorf("got %+v, want NaN ends", iv)
		}
	}
}

// Reference quantiles from python3's statistics.NormalDist().inv_cdf.
func TestZForLevel(t *testing.T) {
	tests := []struct{ level, want float64 }{
		{0.95, 1.959963984540054},
		{0.90, 1.6448536269514715},
		{0.99, 2.5758293035489},
	}
	for _, tt := range tests {
		if got := ZForLevel(tt.level); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("ZForLevel(%g) = %.17g, want %.17g", tt.level, got, tt.want)
		}
	}
}
