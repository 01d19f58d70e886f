package policy

import (
	"math"
	"testing"
)

// The rule's figures worked by hand: probabilities .9, .2, (none), .6 at
// τ = .5 keep fc on turns 1 and 4 (a tie with fc each) and drop the
// history on turn 2, where ao beat fc (FCWins 0): win rate (.5 + 1 + .5)/3
// = 2/3, fc on 2 of 3 turns, 4/3 of fc's quality, tokens (100 + 20 + 100)
// / (100 + 200 + 100) = .55. Turn 3 has no probability and is left out.
func TestFiguresByHand(t *testing.T) {
	ex := []Example{
		{Conv: "a", TurnFeatures: TurnFeatures{FCTokens: 100, AOTokens: 10}, FCWins: 1},
		{Conv: "a", TurnFeatures: TurnFeatures{FCTokens: 200, AOTokens: 20}, FCWins: 0},
		{Conv: "b", TurnFeatures: TurnFeatures{FCTokens: 999, AOTokens: 9}, FCWins: 1},
		{Conv: "b", TurnFeatures: TurnFeatures{FCTokens: 100, AOTokens: 10}, FCWins: 0.5},
	}
	f := figures(ex, []float64{0.9, 0.2, math.NaN(), 0.6}, 0.5)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if f.Turns != 3 || !near(f.FCShare, 2.0/3) || !near(f.WinRateVsFC, 2.0/3) || !near(f.QualityRetained, 4.0/3) || !near(f.TokenShare, 0.55) {
		t.Errorf("figures %+v", f)
	}
}
