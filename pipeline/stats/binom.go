package stats

import (
	"fmt"
	"math"
	"math/big"
)

// exactLimit is the largest n whose binomial tail is summed in exact
// integer arithmetic. Below it the p-value is exact up to one final
// rounding; above it big integers get slow and log-gamma sums are accurate
// to about 1e-10 relative, far beyond what a p-value needs.
const exactLimit = 1000

// SignTest is the exact two-sided binomial test of k successes in n trials
// against p = 1/2: min(1, 2·min(P(X ≤ k), P(X ≥ k))) for X ~ Bin(n, 1/2).
// n == 0 gives 1. It panics when k or n is out of range, which is a bug in
// the caller, not a property of the data.
func SignTest(k, n int) float64 {
	if n < 0 || k < 0 || k > n {
		panic(fmt.Sprintf("stats: SignTest(%d, %d): need 0 <= k <= n", k, n))
	}
	if n == 0 {
		return 1
	}
	// By symmetry the smaller tail is the lower tail at min(k, n-k).
	m := min(k, n-k)
	var p float64
	if n <= exactLimit {
		p = twiceLowerTailExact(m, n)
	} else {
		p = twiceLowerTailLog(m, n)
	}
	return math.Min(1, p)
}

// McNemarExact is the exact McNemar test for paired binary outcomes: b and c
// are the discordant pairs (yes/no and no/yes). Concordant pairs carry no
// information about the difference, so it is the sign test of b in b + c.
func McNemarExact(b, c int) float64 {
	if b < 0 || c < 0 {
		panic(fmt.Sprintf("stats: McNemarExact(%d, %d): counts must be >= 0", b, c))
	}
	return SignTest(b, b+c)
}

// twiceLowerTailExact returns 2·Σ_{i≤m} C(n,i) / 2^n, rounded once.
func twiceLowerTailExact(m, n int) float64 {
	sum := new(big.Int)
	c := big.NewInt(1) // C(n, 0)
	for i := 0; i <= m; i++ {
		sum.Add(sum, c)
		c.Mul(c, big.NewInt(int64(n-i)))
		c.Quo(c, big.NewInt(int64(i+1))) // exact: C(n,i+1) is an integer
	}
	den := new(big.Int).Lsh(big.NewInt(1), uint(n-1)) // 2^n / 2
	p, _ := new(big.Rat).SetFrac(sum, den).Float64()
	return p
}

// twiceLowerTailLog computes the same in log space for large n, where 2^-n
// underflows. The largest term is i = m (m ≤ n/2); smaller terms follow from
// it by the ratio C(n,i-1)/C(n,i) = i/(n-i+1), so only one log-gamma
// evaluation enters the result.
func twiceLowerTailLog(m, n int) float64 {
	nf := float64(n)
	lgN, _ := math.Lgamma(nf + 1)
	lgM, _ := math.Lgamma(float64(m) + 1)
	lgR, _ := math.Lgamma(nf - float64(m) + 1)
	logTop := lgN - lgM - lgR - nf*math.Ln2

	acc, t := 1.0, 1.0
	for i := m; i > 0; i-- {
		t *= float64(i) / (nf - float64(i) + 1)
		acc += t
		if t < acc*1e-17 {
			break
		}
	}
	return math.Exp(math.Ln2 + logTop + math.Log(acc))
}
