package stats

import (
	"math"
	"testing"
)

// verdicts builds n verdicts with outcome o in conversation conv, turns
// numbered from 1.
func verdicts(conv string, o Outcome, n int) []Verdict {
	vs := make([]Verdict, n)
	for i := range vs {
		vs[i] = Verdict{Conversation: conv, Turn: i + 1, Outcome: o}
	}
	return vs
}

func join(parts ...[]Verdict) []Verdict {
	var vs []Verdict
	for _, p := range parts {
		vs = append(vs, p...)
	}
	return vs
}

func TestWinRate(t *testing.T) {
	tests := []struct {
		name string
		vs   []Verdict
		want Counts
		rate float64
	}{
		{"all wins", verdicts("c", AWins, 4), Counts{Wins: 4, N: 4}, 1},
		{"all losses", verdicts("c", BWins, 4), Counts{Losses: 4, N: 4}, 0},
		{"all ties count half", verdicts("c", Tie, 4), Counts{Ties: 4, N: 4}, 0.5},
		{"3 wins 1 loss 2 ties: (3+1)/6", join(verdicts("a", AWins, 3), verdicts("b", BWins, 1), verdicts("c", Tie, 2)),
			Counts{Wins: 3, Losses: 1, Ties: 2, N: 6}, 4.0 / 6},
		{"invalid outcome left out of n", join(verdicts("a", AWins, 1), verdicts("b", 0, 2), verdicts("c", Outcome(9), 1)),
			Counts{Wins: 1, N: 1, Invalid: 3}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Tally(tt.vs); got != tt.want {
				t.Errorf("Tally = %+v, want %+v", got, tt.want)
			}
			if got := WinRate(tt.vs); math.Abs(got-tt.rate) > 1e-15 {
				t.Errorf("WinRate = %v, want %v", got, tt.rate)
			}
		})
	}
	if r := WinRate(nil); !math.IsNaN(r) {
		t.Errorf("WinRate(nil) = %v, want NaN", r)
	}
}

func TestParseOutcome(t *testing.T) {
	for _, o := range []Outcome{AWins, BWins, Tie} {
		got, err := ParseOutcome(o.String())
		if err != nil || got != o {
			t.Errorf("ParseOutcome(%q) = %v, %v", o.String(), got, err)
		}
	}
	if _, err := ParseOutcome("draw"); err == nil {
		t.Error("ParseOutcome(draw): want error")
	}
	if Outcome(0).Valid() || Outcome(4).Valid() {
		t.Error("zero and out-of-range outcomes must be invalid")
	}
}
