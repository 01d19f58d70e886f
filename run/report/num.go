package report

import (
	"math"
	"strconv"
)

// Num is a number in the report. It encodes NaN and infinities as null (a
// rate of nothing is unknown, not zero) and rounds to 6 decimals so golden
// files do not churn on the last bit.
type Num float64

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return []byte(strconv.FormatFloat(round6(f), 'f', -1, 64)), nil
}

func round6(f float64) float64 {
	r := math.Round(f*1e6) / 1e6
	if r == 0 {
		return 0 // no "-0"
	}
	return r
}

// Known reports whether n is a number (not NaN).
func (n Num) Known() bool { return !math.IsNaN(float64(n)) && !math.IsInf(float64(n), 0) }

// pct formats a rate as a percentage with one decimal, or "—" when unknown.
func pct(n Num) string {
	if !n.Known() {
		return "—"
	}
	return strconv.FormatFloat(float64(n)*100, 'f', 1, 64) + "%"
}

// fix formats with d decimals, or "—" when unknown.
func fix(n Num, d int) string {
	if !n.Known() {
		return "—"
	}
	return strconv.FormatFloat(float64(n), 'f', d, 64)
}

// pval formats a p-value.
func pval(n Num) string {
	if !n.Known() {
		return "—"
	}
	f := float64(n)
	if f < 0.001 {
		return "<0.001"
	}
	return strconv.FormatFloat(f, 'f', 3, 64)
}
