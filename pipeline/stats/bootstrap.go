package stats

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
)

// Options configures intervals and flags. The zero value is usable: every
// zero field takes the default given next to it.
type Options struct {
	Level            float64 // confidence level; default 0.95
	Resamples        int     // bootstrap rounds; default 2000
	Seed             uint64  // PCG seed; 0 is a valid seed, not "random"
	MinN             int     // SmallN when n < MinN; default 30
	MinConversations int     // FewConversations when below; default 10
}

const (
	DefaultLevel            = 0.95
	DefaultResamples        = 2000
	DefaultMinN             = 30
	DefaultMinConversations = 10
)

func (o Options) withDefaults() Options {
	if o.Level <= 0 || o.Level >= 1 {
		o.Level = DefaultLevel
	}
	if o.Resamples <= 0 {
		o.Resamples = DefaultResamples
	}
	if o.MinN <= 0 {
		o.MinN = DefaultMinN
	}
	if o.MinConversations <= 0 {
		o.MinConversations = DefaultMinConversations
	}
	return o
}

// clusters groups valid verdicts by conversation, in sorted id order so the
// resampling does not depend on the order verdicts were loaded in.
func clusters(vs []Verdict) []Cluster {
	idx := map[string]int{}
	var ids []string
	var cs []Cluster
	for _, v := range vs {
		if !v.Outcome.Valid() {
			continue
		}
		i, ok := idx[v.Conversation]
		if !ok {
			i = len(cs)
			idx[v.Conversation] = i
			ids = append(ids, v.Conversation)
			cs = append(cs, Cluster{})
		}
		cs[i].Add(v.Outcome)
	}
	order := make([]int, len(cs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(ids[a], ids[b]) })
	sorted := make([]Cluster, len(cs))
	for i, j := range order {
		sorted[i] = cs[j]
	}
	return sorted
}

// ClusterBootstrap returns the percentile interval of A's win rate from a
// bootstrap that resamples conversations with replacement (see the package
// documentation for the exact recipe). Only Level, Resamples and Seed of opt
// are used. No valid verdicts give NaN ends.
func ClusterBootstrap(vs []Verdict, opt Options) Interval {
	return bootstrap(clusters(vs), opt.withDefaults())
}

// bootstrap resamples cs, given in conversation-id order, under opt with
// its defaults filled in.
func bootstrap(cs []Cluster, opt Options) Interval {
	if len(cs) == 0 {
		return nanInterval()
	}
	src := rand.NewPCG(opt.Seed, 0)
	k := uint64(len(cs))
	rates := make([]float64, opt.Resamples)
	for b := range rates {
		var s2, n int
		for range k {
			c := cs[boundedDraw(src, k)]
			s2 += int(c.S2)
			n += int(c.N)
		}
		rates[b] = float64(s2) / float64(2*n)
	}
	slices.Sort(rates)
	alpha := 1 - opt.Level
	return Interval{quantile(rates, alpha/2), quantile(rates, 1-alpha/2)}
}

// boundedDraw returns a uniform integer in [0, n) using Lemire's
// multiply-and-reject method. It is written out rather than taken from
// rand.Rand so the sequence depends only on PCG, whose output is fixed by
// its specification, and not on how a Go release implements IntN.
func boundedDraw(src *rand.PCG, n uint64) uint64 {
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return hi
}

// quantile is the type-7 sample quantile of sorted xs: linear interpolation
// between the order statistics around (len-1)·q.
func quantile(xs []float64, q float64) float64 {
	h := float64(len(xs)-1) * q
	i := int(math.Floor(h))
	if i >= len(xs)-1 {
		return xs[len(xs)-1]
	}
	f := h - float64(i)
	if f == 0 {
		return xs[i]
	}
	return xs[i] + f*(xs[i+1]-xs[i])
}

// MeanBootstrap returns the percentile interval of the mean of xs from a
// bootstrap that resamples xs with replacement. Each x is one cluster's
// value (a problem's mean gain over its answers), so answers of one
// problem move together, as §5.1's problem-clustered intervals need. Only
// Level, Resamples and Seed of opt are used; no xs gives NaN ends.
func MeanBootstrap(xs []float64, opt Options) Interval {
	if len(xs) == 0 {
		return nanInterval()
	}
	opt = opt.withDefaults()
	src := rand.NewPCG(opt.Seed, 0)
	k := uint64(len(xs))
	means := make([]float64, opt.Resamples)
	for b := range means {
		var s float64
		for range k {
			s += xs[boundedDraw(src, k)]
		}
		means[b] = s / float64(k)
	}
	slices.Sort(means)
	alpha := 1 - opt.Level
	return Interval{quantile(means, alpha/2), quantile(means, 1-alpha/2)}
}
