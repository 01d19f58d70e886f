package stats

import "fmt"

// TiePolicy says how a tie enters an analysis that needs a binary outcome:
// the exact McNemar test between arms (CompareArms) and the L1 logistic
// fit of the adaptive policy (FitL1Logistic). The zero value is
// TiesAsLosses, the convention of both uses in the papers: Huang et al.
// label a turn 1 only when the judge preferred full context, and the AC3
// paper counts an arm's turn as a success only when it won.
type TiePolicy uint8

const (
	// TiesAsLosses counts a tie as "did not win".
	TiesAsLosses TiePolicy = iota
	// TiesHalf counts a tie as half a win, as the win rate does. In a fit
	// a tie becomes two rows, one of each class, each of weight 1/2; in
	// CompareArms outcomes are ordered loss < tie < win.
	TiesHalf
	// TiesDropped leaves ties out. In CompareArms a turn is left out when
	// either arm tied.
	TiesDropped
)

// String returns "losses", "half" or "dropped".
func (p TiePolicy) String() string {
	switch p {
	case TiesAsLosses:
		return "losses"
	case TiesHalf:
		return "half"
	case TiesDropped:
		return "dropped"
	}
	return fmt.Sprintf("TiePolicy(%d)", uint8(p))
}

// ParseTiePolicy reads "losses", "half" or "dropped" (the spellings of
// String), for configs.
func ParseTiePolicy(s string) (TiePolicy, error) {
	switch s {
	case "losses", "loss":
		return TiesAsLosses, nil
	case "half":
		return TiesHalf, nil
	case "dropped", "drop":
		return TiesDropped, nil
	}
	return 0, fmt.Errorf("stats: unknown tie policy %q (want losses, half or dropped)", s)
}

func (p TiePolicy) valid() bool { return p <= TiesDropped }

// Swapped returns the outcome seen from the other strategy of the pair:
// AWins and BWins trade places, a tie stays a tie and an invalid outcome
// stays invalid. CompareArms needs each arm's outcome from the arm's side,
// which for a pair stored as "ao:fc" is the swapped verdict.
func (o Outcome) Swapped() Outcome {
	switch o {
	case AWins:
		return BWins
	case BWins:
		return AWins
	}
	return o
}
