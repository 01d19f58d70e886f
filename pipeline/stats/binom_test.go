package stats

import (
	"math"
	"testing"
)

// Expected p-values were derived by hand from the binomial sums and checked
// with python3's exact integers:
//
//	from math import comb; from fractions import Fraction
//	m = min(k, n-k); float(min(1, Fraction(2*sum(comb(n, i) for i in range(m+1)), 2**n)))
//
// For p = 1/2, scipy.stats.binomtest(k, n).pvalue (two-sided: sum of the
// outcomes no more likely than k) equals this doubled smaller tail by
// symmetry, so e.g. binomtest(9, 10).pvalue = 0.021484375 as well.
func TestSignTestExact(t *testing.T) {
	tests := []struct {
		name string
		k, n int
		want float64
	}{
		{"9 of 10: 2(1+10)/1024", 9, 10, 0.021484375},
		{"1 of 10, mirror", 1, 10, 0.021484375},
		{"15 of 20: 2(1+20+190+1140+4845+15504)/2^20", 15, 20, 0.04138946533203125},
		{"5 of 20, mirror", 5, 20, 0.04138946533203125},
		{"0 of 5: 2/32", 0, 5, 0.0625},
		{"10 of 10: 2/1024", 10, 10, 0.001953125},
		{"middle of even n capped at 1", 5, 10, 1},
		{"3 of 6 capped", 3, 6, 1},
		{"n = 1", 0, 1, 1},
		{"n = 0: no evidence", 0, 0, 1},
		{"2 of 30", 2, 30, 8.67992639541626e-07},
		{"45 of 100", 45, 100, 0.36820161732669626},
		{"60 of 100", 60, 100, 0.05688793364098079},
		{"520 of 1000, last exact n", 520, 1000, 0.21744829320414094},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The exact path rounds once, as Fraction -> float does, so
			// the values must agree to the last bit.
			if got := SignTest(tt.k, tt.n); got != tt.want {
				t.Errorf("SignTest(%d, %d) = %.17g, want %.17g", tt.k, tt.n, got, tt.want)
			}
		})
	}
}

// Above exactLimit the log-gamma path is used; reference values from the
// same python3 snippet.
func TestSignTestLargeN(t *testing.T) {
	tests := []struct {
		k, n int
		want float64
	}{
		{1050, 2000, 0.026824146240280695},
		{4900, 10000, 0.04658552770494739},
		{4800, 10000, 6.593515598672442e-05},
		{5000, 10000, 1},
		{5100, 10001, 0.04770923880066461},
	}
	for _, tt := range tests {
		got := SignTest(tt.k, tt.n)
		if rel := math.Abs(got-tt.want) / tt.want; rel > 1e-9 {
			t.Errorf("SignTest(%d, %d) = %.17g, want %.17g (rel err %.2g)", tt.k, tt.n, got, tt.want, rel)
		}
	}
}

// The two tail computations must agree where both are usable, so the switch
// at exactLimit is invisible.
func TestTailPathsAgree(t *testing.T) {
	for _, n := range []int{1, 2, 10, 101, 500, 999, 1000} {
		for _, m := range []int{0, 1, n / 4, n/2 - 1, n / 2} {
			if m < 0 || m > n/2 {
				continue
			}
			a, b := twiceLowerTailExact(m, n), twiceLowerTailLog(m, n)
			if rel := math.Abs(a-b) / a; rel > 1e-9 {
				t.Errorf("n=%d m=%d: exact %.17g, log %.17g (rel err %.2g)", n, m, a, b, rel)
			}
		}
	}
}

func TestMcNemarExact(t *testing.T) {
	tests := []struct {
		b, c int
		want float64
	}{
		{1, 9, SignTest(1, 10)}, // discordant pairs only: sign test of b in b+c
		{1, 9, 0.021484375},
		{9, 1, 0.021484375},
		{0, 0, 1},
		{5, 15, 0.04138946533203125},
	}
	for _, tt := range tests {
		if got := McNemarExact(tt.b, tt.c); got != tt.want {
			t.Errorf("McNemarExact(%d, %d) = %.17g, want %.17g", tt.b, tt.c, got, tt.want)
		}
	}
}

func TestSignTestPanicsOnBadInput(t *testing.T) {
	for _, in := range [][2]int{{-1, 3}, {4, 3}, {0, -1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("SignTest(%d, %d) did not panic", in[0], in[1])
				}
			}()
			SignTest(in[0], in[1])
		}()
	}
}
