package stats

import "fmt"

// Cluster is what one conversation contributes to a summary: S2 is twice
// the score of its valid verdicts (2 per A win, 1 per tie) and N how many
// there are. It is all the conversation bootstrap needs to know about a
// conversation, so a caller that folds verdicts as they stream by keeps one
// Cluster per conversation instead of every verdict. int32 keeps it at 8
// bytes; one conversation would need a billion verdicts in one summary to
// overflow it.
type Cluster struct {
	S2, N int32
}

// Add counts one outcome; invalid outcomes are left out, as the bootstrap
// leaves them out.
func (c *Cluster) Add(o Outcome) {
	if !o.Valid() {
		return
	}
	c.S2 += int32(score2(o))
	c.N++
}

// Add counts one outcome, as Tally does.
func (c *Counts) Add(o Outcome) { c.add(o) }

// BootstrapClusters is ClusterBootstrap over clusters already folded, one
// per conversation with at least one valid verdict, given in increasing
// order of the conversations' ids (the order ClusterBootstrap sorts them
// into). The same clusters and seed give the interval ClusterBootstrap
// gives for the verdicts they came from, bit for bit. It panics on an
// empty cluster (N == 0), which is a bug in the caller's fold.
func BootstrapClusters(cs []Cluster, opt Options) Interval {
	for i, c := range cs {
		if c.N <= 0 {
			panic(fmt.Sprintf("stats: BootstrapClusters: cluster %d has no verdicts", i))
		}
	}
	return bootstrap(cs, opt.withDefaults())
}

// SummarizeClusters is Summarize for a fold: c tallies every verdict
// (invalid ones included) and cs holds one cluster per conversation with a
// valid verdict, in increasing order of conversation id. It gives exactly
// the Summary that Summarize gives for the same verdicts.
func SummarizeClusters(c Counts, cs []Cluster, opt Options) Summary {
	opt = opt.withDefaults()
	s := Summary{
		Counts:        c,
		Conversations: len(cs),
		WinRate:       c.WinRate(),
		Level:         opt.Level,
		Bootstrap:     BootstrapClusters(cs, opt),
		Resamples:     opt.Resamples,
		Seed:          opt.Seed,
		Wilson:        Wilson(c.Score(), c.N, opt.Level),
		SignP:         SignTest(c.Wins, c.Decisive()),
	}
	s.SmallN = c.N < opt.MinN
	s.FewConversations = s.Conversations < opt.MinConversations
	s.Warning = warning(c, s.Conversations, opt)
	return s
}

// PositionTally folds verdicts into the counts of MeasurePositionBias, for
// callers that see verdicts one at a time. The zero value is empty.
type PositionTally struct {
	Known, Ties, Decisive, FirstWins int
}

// Add counts v when its outcome is valid and the strategy shown first is
// known; other verdicts are skipped.
func (t *PositionTally) Add(v Verdict) {
	if !v.Outcome.Valid() || (v.FirstShown != SideA && v.FirstShown != SideB) {
		return
	}
	t.Known++
	switch {
	case v.Outcome == Tie:
		t.Ties++
	case (v.Outcome == AWins) == (v.FirstShown == SideA):
		t.Decisive++
		t.FirstWins++
	default:
		t.Decisive++
	}
}

// AddPair counts the two single-order verdicts of a both-orders pair, the
// ones SplitOrders returns.
func (t *PositionTally) AddPair(p OrderPair) {
	t.Add(Verdict{Outcome: p.AFirst, FirstShown: SideA})
	t.Add(Verdict{Outcome: p.BFirst, FirstShown: SideB})
}

// Bias computes the share, interval, test and flags from the counts. Only
// Level and MinN of opt are used.
func (t PositionTally) Bias(opt Options) PositionBias {
	opt = opt.withDefaults()
	pb := PositionBias{Known: t.Known, Ties: t.Ties, Decisive: t.Decisive, FirstWins: t.FirstWins}
	pb.FirstShare = nanValue()
	if pb.Decisive > 0 {
		pb.FirstShare = float64(pb.FirstWins) / float64(pb.Decisive)
	}
	pb.Wilson = Wilson(float64(pb.FirstWins), pb.Decisive, opt.Level)
	pb.P = SignTest(pb.FirstWins, pb.Decisive)
	pb.SmallN = pb.Decisive < opt.MinN
	switch {
	case pb.Decisive == 0:
		pb.Warning = "no decisive verdicts with a known position"
	case pb.SmallN:
		pb.Warning = fmt.Sprintf("small n: %d decisive verdicts (fewer than %d)", pb.Decisive, opt.MinN)
	}
	return pb
}

// ConsistencyTally folds both-orders pairs into the counts of
// PositionConsistency. The zero value is empty.
type ConsistencyTally struct {
	Pairs, Invalid, Consistent, FirstBoth, SecondBoth int
}

// Add counts one pair.
func (t *ConsistencyTally) Add(p OrderPair) {
	if !p.AFirst.Valid() || !p.BFirst.Valid() {
		t.Invalid++
		return
	}
	t.Pairs++
	switch {
	case p.AFirst == p.BFirst:
		t.Consistent++
	case p.AFirst == AWins && p.BFirst == BWins:
		t.FirstBoth++
	case p.AFirst == BWins && p.BFirst == AWins:
		t.SecondBoth++
	}
}

// Consistency computes the rate and its interval from the counts. Only
// Level of opt is used.
func (t ConsistencyTally) Consistency(opt Options) Consistency {
	opt = opt.withDefaults()
	c := Consistency{Pairs: t.Pairs, Invalid: t.Invalid, Consistent: t.Consistent, FirstBoth: t.FirstBoth, SecondBoth: t.SecondBoth}
	c.Rate = nanValue()
	if c.Pairs > 0 {
		c.Rate = float64(c.Consistent) / float64(c.Pairs)
	}
	c.Wilson = Wilson(float64(c.Consistent), c.Pairs, opt.Level)
	return c
}
