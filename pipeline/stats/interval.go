package stats

import "math"

// Interval is a closed interval [Lo, Hi] on the win-rate scale. Both ends
// are NaN when there was nothing to estimate.
type Interval struct {
	Lo, Hi float64
}

// Width is Hi - Lo.
func (iv Interval) Width() float64 { return iv.Hi - iv.Lo }

// Contains reports whether Lo <= x <= Hi.
func (iv Interval) Contains(x float64) bool { return iv.Lo <= x && x <= iv.Hi }

func nanValue() float64 { return math.NaN() }

func nanInterval() Interval { return Interval{math.NaN(), math.NaN()} }

// Z95 is the two-sided 95% normal quantile, Φ⁻¹(0.975).
const Z95 = 1.959963984540054

// ZForLevel returns the two-sided normal quantile Φ⁻¹((1+level)/2) for a
// confidence level in (0, 1), e.g. about 1.96 for 0.95.
func ZForLevel(level float64) float64 {
	if level == 0.95 {
		// The value of scipy's norm.ppf(0.975); Erfinv lands a couple
		// of ulps below it.
		return Z95
	}
	return math.Sqrt2 * math.Erfinv(level)
}

// Wilson returns the Wilson score interval at the given confidence level
// for x successes out of n trials. x may be fractional: for a win rate pass
// wins + ties/2 with n comparisons, i.e. the interval is computed on the
// win-rate scale with n trials. n == 0 gives NaN ends.
func Wilson(x float64, n int, level float64) Interval {
	return WilsonZ(x, n, ZForLevel(level))
}

// WilsonZ is Wilson with the normal quantile z given directly.
func WilsonZ(x float64, n int, z float64) Interval {
	if n <= 0 || x < 0 || x > float64(n) {
		return nanInterval()
	}
	nf := float64(n)
	p := x / nf
	z2 := z * z
	den := 1 + z2/nf
	center := (p + z2/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf)) / den
	iv := Interval{center - half, center + half}
	// At p = 0 or 1 the end is exactly 0 or 1; rounding would leave it a
	// hair off (e.g. 3e-17), which looks like a real bound in a report.
	if x == 0 {
		iv.Lo = 0
	}
	if x == nf {
		iv.Hi = 1
	}
	iv.Lo = math.Max(0, iv.Lo)
	iv.Hi = math.Min(1, iv.Hi)
	return iv
}
