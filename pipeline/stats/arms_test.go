package stats

import (
	"math"
	"testing"
)

// armFixture is gated-reset (X) and fc (Y), each judged against ao on the
// same 44 turns. Rows are X's outcome, columns Y's, in the order A wins
// (the arm won), B wins (ao won), tie.
var armFixture = [3][3]int{
	{20, 3, 2},
	{4, 6, 2},
	{5, 1, 1},
}

// The expected values are derived by hand from armFixture; each P is
// scipy.stats.binomtest(XBetter, XBetter+YBetter, 0.5).pvalue, which for
// TiesAsLosses and TiesDropped equals statsmodels'
// mcnemar([[both, xOnly], [yOnly, neither]], exact=True).pvalue.
func TestArmTableTest(t *testing.T) {
	tests := []struct {
		ties TiePolicy
		want ArmTest
	}{
		{
			// Success = win. X won 20+3+2 = 25 turns, Y 20+4+5 = 29.
			// X won and Y did not: 3+2; Y won and X did not: 4+5.
			// P = 2·Σ_{i≤5} C(14,i)/2^14 = 2·3473/16384.
			TiesAsLosses,
			ArmTest{Ties: TiesAsLosses, Pairs: 44, Concordant: 30, XBetter: 5, YBetter: 9,
				XRate: 25.0 / 44, YRate: 29.0 / 44, Diff: -4.0 / 44, P: 6946.0 / 16384},
		},
		{
			// 2+5+1+2+1 = 11 turns with a tie are left out; of the other
			// 33, X won 23 and Y 24; discordant 3 vs 4:
			// P = 2·(1+7+21+35)/128 = 1.
			TiesDropped,
			ArmTest{Ties: TiesDropped, Pairs: 33, Dropped: 11, Concordant: 26, XBetter: 3, YBetter: 4,
				XRate: 23.0 / 33, YRate: 24.0 / 33, Diff: -1.0 / 33, P: 1},
		},
		{
			// loss < tie < win. X better: (win, loss) 3, (win, tie) 2,
			// (tie, loss) 1; Y better: 4 + 5 + 2. Twice X's score:
			// 2·25 + 7 = 57; Y's: 2·29 + 5 = 63.
			// P = 2·Σ_{i≤6} C(17,i)/2^17 = 2·21778/131072.
			TiesHalf,
			ArmTest{Ties: TiesHalf, Pairs: 44, Concordant: 27, XBetter: 6, YBetter: 11,
				XRate: 57.0 / 88, YRate: 63.0 / 88, Diff: -6.0 / 88, P: 43556.0 / 131072},
		},
	}
	for _, tt := range tests {
		t.Run(tt.ties.String(), func(t *testing.T) {
			tab := ArmTable{Counts: armFixture}
			got, err := tab.Test(tt.ties)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// The AC3 paper's WildChat floor comparison: 35 turns scored in both arms,
// discordant 1 vs 6, a gap of −14.3 points and exact McNemar p = 0.125.
func TestCompareArmsPaperExample(t *testing.T) {
	var pairs []ArmPair
	add := func(x, y Outcome, n int) {
		for range n {
			pairs = append(pairs, ArmPair{x, y})
		}
	}
	add(AWins, AWins, 20)
	add(BWins, BWins, 8)
	add(AWins, BWins, 1)
	add(BWins, AWins, 6)
	add(Tie, 0, 2) // an unjudged turn is left out, not counted as a loss
	got, err := CompareArms(pairs, TiesAsLosses)
	if err != nil {
		t.Fatal(err)
	}
	if got.Pairs != 35 || got.Invalid != 2 || got.XBetter != 1 || got.YBetter != 6 {
		t.Fatalf("counts: %+v", got)
	}
	if got.P != 0.125 {
		t.Errorf("P = %v, want 0.125", got.P)
	}
	if math.Abs(got.Diff-(-5.0/35)) > 1e-15 || math.Round(got.Diff*1000)/10 != -14.3 {
		t.Errorf("Diff = %v, want −5/35 (−14.3 points)", got.Diff)
	}
}

func TestArmTableEdges(t *testing.T) {
	var empty ArmTable
	got, err := empty.Test(TiesAsLosses)
	if err != nil {
		t.Fatal(err)
	}
	if got.Pairs != 0 || got.P != 1 || !math.IsNaN(got.XRate) || !math.IsNaN(got.Diff) {
		t.Errorf("empty table: %+v", got)
	}

	// All concordant: nothing to test.
	var same ArmTable
	for _, o := range []Outcome{AWins, BWins, Tie, AWins} {
		same.Add(o, o)
	}
	got, _ = same.Test(TiesHalf)
	if got.Concordant != 4 || got.XBetter+got.YBetter != 0 || got.P != 1 || got.Diff != 0 {
		t.Errorf("concordant table: %+v", got)
	}

	if _, err := same.Test(TiePolicy(9)); err == nil {
		t.Error("unknown tie policy: no error")
	}
}

func TestSwapped(t *testing.T) {
	for o, want := range map[Outcome]Outcome{AWins: BWins, BWins: AWins, Tie: Tie, 0: 0, 7: 7} {
		if got := o.Swapped(); got != want {
			t.Errorf("%v.Swapped() = %v, want %v", o, got, want)
		}
	}
}

func TestParseTiePolicy(t *testing.T) {
	for _, p := range []TiePolicy{TiesAsLosses, TiesHalf, TiesDropped} {
		got, err := ParseTiePolicy(p.String())
		if err != nil || got != p {
			t.Errorf("ParseTiePolicy(%q) = %v, %v", p.String(), got, err)
		}
	}
	if _, err := ParseTiePolicy("win"); err == nil {
		t.Error("ParseTiePolicy(win): no error")
	}
}
