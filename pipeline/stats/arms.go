package stats

import "fmt"

// ArmPair is one turn judged for two arms against the same reference: X is
// the outcome of arm X against the reference, Y that of arm Y on the same
// turn (for example gated-reset vs ao and fc vs ao). Both are from the
// arm's side, AWins meaning the arm beat the reference; use
// Outcome.Swapped for a pair stored with the reference as strategy A.
type ArmPair struct {
	X, Y Outcome
}

// ArmTable tallies paired outcomes of two arms on the same turns. It keeps
// only a 3×3 table of counts, so a report can feed it one turn at a time
// without holding the turns; Test reads it under any tie policy. The zero
// value is an empty table.
type ArmTable struct {
	// Counts[x][y] is the number of turns where arm X had outcome x+1 and
	// arm Y outcome y+1 (indices AWins-1, BWins-1, Tie-1).
	Counts  [3][3]int
	Invalid int // turns where either outcome was missing or invalid
}

// Add records one turn.
func (t *ArmTable) Add(x, y Outcome) {
	if !x.Valid() || !y.Valid() {
		t.Invalid++
		return
	}
	t.Counts[x-1][y-1]++
}

// ArmTest is the exact McNemar test between two arms judged against a
// common reference on the same turns.
//
// Each turn gives each arm a result under the tie policy: with
// TiesAsLosses a win is a success and a tie or a loss is not; with
// TiesDropped turns where either arm tied are left out and the rest are
// win/loss; with TiesHalf results are ordered loss < tie < win. A turn is
// discordant when the two arms' results differ: XBetter counts the turns
// where X's result was better, YBetter those where Y's was. Concordant
// turns say nothing about which arm is better, so the test is the exact
// two-sided binomial test of XBetter in XBetter + YBetter against 1/2
// (statsmodels' mcnemar(table, exact=True) on the 2×2 table of binary
// results; for TiesHalf the same test on the sign of each turn's
// difference). Turns are treated as independent: turns of one
// conversation are correlated, so with many turns per conversation P is
// optimistic.
type ArmTest struct {
	Ties       TiePolicy
	Pairs      int // turns counted (valid, not dropped)
	Dropped    int // turns left out because an arm tied (TiesDropped)
	Invalid    int // turns left out because an outcome was invalid
	Concordant int // of Pairs, both arms' results equal
	XBetter    int // of Pairs, X's result better than Y's (b)
	YBetter    int // of Pairs, Y's result better than X's (c)
	// XRate and YRate are each arm's mean result over Pairs: its share of
	// wins, or under TiesHalf its win rate with ties as half wins; Diff is
	// XRate − YRate. NaN when Pairs is 0.
	XRate, YRate, Diff float64
	P                  float64 // exact two-sided McNemar p-value
}

// result maps an outcome to twice its score under p: 2 a success, 0 a
// failure, 1 a tie under TiesHalf.
func (p TiePolicy) result2(o Outcome) int {
	switch o {
	case AWins:
		return 2
	case Tie:
		if p == TiesHalf {
			return 1
		}
	}
	return 0
}

// Test computes the McNemar test of the table under ties. It returns an
// error only for an unknown tie policy.
func (t ArmTable) Test(ties TiePolicy) (ArmTest, error) {
	if !ties.valid() {
		return ArmTest{}, fmt.Errorf("stats: comparing arms: unknown tie policy %d", ties)
	}
	r := ArmTest{Ties: ties, Invalid: t.Invalid}
	var x2, y2 int
	for i := range 3 {
		for j := range 3 {
			n := t.Counts[i][j]
			if n == 0 {
				continue
			}
			x, y := Outcome(i+1), Outcome(j+1)
			if ties == TiesDropped && (x == Tie || y == Tie) {
				r.Dropped += n
				continue
			}
			r.Pairs += n
			rx, ry := ties.result2(x), ties.result2(y)
			x2 += n * rx
			y2 += n * ry
			switch {
			case rx > ry:
				r.XBetter += n
			case ry > rx:
				r.YBetter += n
			default:
				r.Concordant += n
			}
		}
	}
	r.XRate, r.YRate, r.Diff = nanValue(), nanValue(), nanValue()
	if r.Pairs > 0 {
		r.XRate = float64(x2) / float64(2*r.Pairs)
		r.YRate = float64(y2) / float64(2*r.Pairs)
		r.Diff = float64(x2-y2) / float64(2*r.Pairs) // one rounding, not two
	}
	r.P = McNemarExact(r.XBetter, r.YBetter)
	return r, nil
}

// CompareArms tallies pairs and tests them under ties (see ArmTest).
func CompareArms(pairs []ArmPair, ties TiePolicy) (ArmTest, error) {
	var t ArmTable
	for _, p := range pairs {
		t.Add(p.X, p.Y)
	}
	return t.Test(ties)
}
