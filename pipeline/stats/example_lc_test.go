package stats_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ac3/ac3/pipeline/stats"
)

func ExampleArmTable() {
	// gated-reset (X) and fc (Y), each judged against ao on the same
	// turns; outcomes are from each arm's side.
	var t stats.ArmTable
	for range 20 {
		t.Add(stats.AWins, stats.AWins)
	}
	for range 8 {
		t.Add(stats.BWins, stats.BWins)
	}
	t.Add(stats.AWins, stats.BWins)
	for range 6 {
		t.Add(stats.BWins, stats.AWins)
	}
	r, err := t.Test(stats.TiesAsLosses)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d turns, discordant %d vs %d, difference %+.1f points, exact McNemar p = %.3f\n",
		r.Pairs, r.XBetter, r.YBetter, 100*r.Diff, r.P)
	// Output: 35 turns, discordant 1 vs 6, difference -14.3 points, exact McNemar p = 0.125
}

func ExampleLCData() {
	// A's answers tend to be longer, and this judge favours the longer
	// answer; at equal length A and B are equally good.
	// Uniform draws straight from PCG, whose output its specification
	// fixes, so the printed numbers cannot change with a Go release.
	src := rand.NewPCG(1, 2)
	unif := func() float64 { return float64(src.Uint64()>>11) / (1 << 53) }
	var d stats.LCData
	for range 200 {
		var conv []stats.LengthSample
		for range 3 {
			lenB := 500 + int(400*unif())
			lenA := lenB + int(600*unif()) - 150
			pA := 1 / (1 + math.Exp(-2*math.Tanh(float64(lenA-lenB)/300)))
			o := stats.BWins
			switch r := unif(); {
			case r < 0.1:
				o = stats.Tie
			case unif() < (pA-0.05)/0.9:
				o = stats.AWins
			}
			conv = append(conv, stats.LengthSample{Outcome: o, LenA: lenA, LenB: lenB})
		}
		if err := d.AddConversation(conv); err != nil {
			panic(err)
		}
	}
	r := d.Fit(stats.Options{Seed: 1, Resamples: 500})
	fmt.Printf("raw %.2f, length-controlled %.2f [%.2f, %.2f]\n", r.WinRate, r.LCWinRate, r.Bootstrap.Lo, r.Bootstrap.Hi)
	// Output: raw 0.67, length-controlled 0.52 [0.47, 0.57]
}
