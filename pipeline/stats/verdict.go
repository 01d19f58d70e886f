package stats

import "fmt"

// Outcome is the judge's decision for one comparison, in terms of the
// strategies (not of the positions they were shown in). The zero value is
// not a valid outcome, so a verdict left unset is never counted as a tie.
type Outcome uint8

const (
	AWins Outcome = iota + 1
	BWins
	Tie
)

// String returns "A", "B" or "tie", the spelling the judge prompt and the
// ledger use.
func (o Outcome) String() string {
	switch o {
	case AWins:
		return "A"
	case BWins:
		return "B"
	case Tie:
		return "tie"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Valid reports whether o is one of AWins, BWins and Tie.
func (o Outcome) Valid() bool { return o >= AWins && o <= Tie }

// ParseOutcome reads "A", "B" or "tie" (also "a", "b", "TIE").
func ParseOutcome(s string) (Outcome, error) {
	switch s {
	case "A", "a":
		return AWins, nil
	case "B", "b":
		return BWins, nil
	case "tie", "Tie", "TIE":
		return Tie, nil
	}
	return 0, fmt.Errorf("stats: unknown outcome %q (want A, B or tie)", s)
}

// Side names a strategy of the pair. It is used for the position shown
// first; SideUnknown when that was not recorded.
type Side string

const (
	SideUnknown Side = ""
	SideA       Side = "A"
	SideB       Side = "B"
)

// Verdict is one judged comparison of strategy A against strategy B on one
// turn of one conversation, for one dimension.
type Verdict struct {
	Conversation string  // cluster for the bootstrap
	Turn         int     // round (user-turn number) of the judged turn
	TurnType     string  // optional, e.g. "new_ask"; "" when unclassified
	Outcome      Outcome // in terms of strategies A and B
	FirstShown   Side    // strategy shown in position 1; "" if unknown
}

// Counts tallies verdicts from A's point of view. N = Wins + Losses + Ties;
// verdicts without a valid outcome are counted in Invalid and nowhere else.
type Counts struct {
	Wins, Losses, Ties, N int
	Invalid               int
}

// Tally counts the outcomes in vs.
func Tally(vs []Verdict) Counts {
	var c Counts
	for _, v := range vs {
		c.add(v.Outcome)
	}
	return c
}

func (c *Counts) add(o Outcome) {
	switch o {
	case AWins:
		c.Wins++
	case BWins:
		c.Losses++
	case Tie:
		c.Ties++
	default:
		c.Invalid++
		return
	}
	c.N++
}

// Decisive is the number of comparisons that were not ties.
func (c Counts) Decisive() int { return c.Wins + c.Losses }

// Score is wins + ties/2, the numerator of the win rate.
func (c Counts) Score() float64 { return float64(c.Wins) + float64(c.Ties)/2 }

// WinRate is (wins + ties/2) / n for A, NaN when n is 0 (no data is not a
// rate of zero).
func (c Counts) WinRate() float64 {
	if c.N == 0 {
		return nanValue()
	}
	return c.Score() / float64(c.N)
}

// WinRate is Tally(vs).WinRate().
func WinRate(vs []Verdict) float64 { return Tally(vs).WinRate() }

// score2 is twice a verdict's score, so bootstrap sums stay in integers and
// are exact.
func score2(o Outcome) int {
	switch o {
	case AWins:
		return 2
	case Tie:
		return 1
	}
	return 0
}
