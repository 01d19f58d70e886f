package stats

// PositionBias describes how often the response shown first wins. With no
// bias FirstShare is about 1/2; judges often favour the second position,
// which shows up as a share below 1/2 with a small P.
type PositionBias struct {
	Known     int // verdicts with a valid outcome and FirstShown recorded
	Ties      int // of Known
	Decisive  int // of Known, not ties
	FirstWins int // of Decisive, won by the response shown first

	FirstShare float64  // FirstWins / Decisive; NaN when Decisive == 0
	Wilson     Interval // for FirstShare
	P          float64  // exact sign test of FirstWins in Decisive vs 1/2
	SmallN     bool     // Decisive < MinN
	Warning    string
}

// MeasurePositionBias computes the first-shown win share over verdicts
// whose FirstShown is known; others are skipped. Only Level and MinN of opt
// are used.
func MeasurePositionBias(vs []Verdict, opt Options) PositionBias {
	var t PositionTally
	for _, v := range vs {
		t.Add(v)
	}
	return t.Bias(opt)
}

// OrderPair is one comparison judged in both orders. Both outcomes are in
// terms of the strategies: AFirst is the verdict when A was shown first,
// BFirst when B was shown first.
type OrderPair struct {
	Conversation string
	Turn         int
	TurnType     string
	AFirst       Outcome
	BFirst       Outcome
}

// Combine merges the two orders: a strategy wins only if it wins in both,
// anything else is a tie. consistent reports whether both orders gave the
// same outcome (tie/tie counts as consistent). An invalid outcome in either
// order gives the zero Outcome, which every summary counts as Invalid.
func Combine(aFirst, bFirst Outcome) (combined Outcome, consistent bool) {
	if !aFirst.Valid() || !bFirst.Valid() {
		return 0, false
	}
	if aFirst == bFirst {
		return aFirst, true
	}
	return Tie, false
}

// CombineOrders turns each pair into one verdict via Combine. FirstShown is
// left unknown: the combined verdict saw both orders.
func CombineOrders(pairs []OrderPair) []Verdict {
	vs := make([]Verdict, len(pairs))
	for i, p := range pairs {
		o, _ := Combine(p.AFirst, p.BFirst)
		vs[i] = Verdict{Conversation: p.Conversation, Turn: p.Turn, TurnType: p.TurnType, Outcome: o}
	}
	return vs
}

// SplitOrders returns the two single-order verdicts of each pair with
// FirstShown set, for MeasurePositionBias.
func SplitOrders(pairs []OrderPair) []Verdict {
	vs := make([]Verdict, 0, 2*len(pairs))
	for _, p := range pairs {
		v := Verdict{Conversation: p.Conversation, Turn: p.Turn, TurnType: p.TurnType}
		v.Outcome, v.FirstShown = p.AFirst, SideA
		vs = append(vs, v)
		v.Outcome, v.FirstShown = p.BFirst, SideB
		vs = append(vs, v)
	}
	return vs
}

// Consistency is the position-consistency report for both-orders judging.
type Consistency struct {
	Pairs      int // pairs with valid outcomes in both orders
	Invalid    int // pairs left out
	Consistent int // same outcome in both orders
	Rate       float64
	Wilson     Interval // for Rate
	// Inconsistent pairs where the position decided: the response shown
	// first (FirstBoth) or second (SecondBoth) won in both orders.
	FirstBoth, SecondBoth int
}

// PositionConsistency reports how often the two orders agree. Only Level of
// opt is used.
func PositionConsistency(pairs []OrderPair, opt Options) Consistency {
	var t ConsistencyTally
	for _, p := range pairs {
		t.Add(p)
	}
	return t.Consistency(opt)
}
