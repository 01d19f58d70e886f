package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomVerdicts draws verdicts over convs conversations from a fixed PCG,
// invalid outcomes and unknown positions included, in conversation order
// (as a ledger streams them) but with ids that do not sort in that order.
func randomVerdicts(seed uint64, convs int) []Verdict {
	r := rand.New(rand.NewPCG(seed, 1))
	var vs []Verdict
	for c := range convs {
		id := fmt.Sprintf("%x-%d", r.Uint32(), c)
		for turn := range 1 + r.IntN(6) {
			v := Verdict{Conversation: id, Turn: turn + 2, Outcome: Outcome(r.IntN(4)), FirstShown: []Side{SideA, SideB, SideUnknown}[r.IntN(3)]}
			vs = append(vs, v)
		}
	}
	return vs
}

// foldClusters folds verdicts that arrive grouped by conversation the way a
// streaming caller does: one cluster per conversation with a valid verdict,
// then sorted by id.
func foldClusters(vs []Verdict) (Counts, []Cluster) {
	var c Counts
	type rec struct {
		id string
		Cluster
	}
	var recs []rec
	for _, v := range vs {
		c.Add(v.Outcome)
		if !v.Outcome.Valid() {
			continue
		}
		if len(recs) == 0 || recs[len(recs)-1].id != v.Conversation {
			recs = append(recs, rec{id: v.Conversation})
		}
		recs[len(recs)-1].Add(v.Outcome)
	}
	slices.SortFunc(recs, func(a, b rec) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	cs := make([]Cluster, len(recs))
	for i, r := range recs {
		cs[i] = r.Cluster
	}
	return c, cs
}

// sameSummary compares two summaries field by field, NaN equal to NaN.
func sameSummary(a, b Summary) bool {
	eq := func(x, y float64) bool { return x == y || (math.IsNaN(x) && math.IsNaN(y)) }
	return a.Counts == b.Counts && a.Conversations == b.Conversations && eq(a.WinRate, b.WinRate) &&
		a.Level == b.Level && eq(a.Bootstrap.Lo, b.Bootstrap.Lo) && eq(a.Bootstrap.Hi, b.Bootstrap.Hi) &&
		a.Resamples == b.Resamples && a.Seed == b.Seed && eq(a.Wilson.Lo, b.Wilson.Lo) && eq(a.Wilson.Hi, b.Wilson.Hi) &&
		a.SignP == b.SignP && a.SmallN == b.SmallN && a.FewConversations == b.FewConversations && a.Warning == b.Warning
}

func TestSummarizeClustersEqualsSummarize(t *testing.T) {
	tests := []struct {
		name string
		vs   []Verdict
	}{
		{"empty", nil},
		{"only invalid", verdicts("x", 0, 3)},
		{"one conversation", verdicts("a", AWins, 4)},
		{"mixed 60", mixed(60)},
		{"random 5", randomVerdicts(1, 5)},
		{"random 200", randomVerdicts(2, 200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opt := Options{Seed: 9, Resamples: 400}
			c, cs := foldClusters(tt.vs)
			got, want := SummarizeClusters(c, cs, opt), Summarize(tt.vs, opt)
			if !sameSummary(got, want) {
				t.Errorf("folded %+v\nwant   %+v", got, want)
			}
		})
	}
}

// The golden interval of TestClusterBootstrapGolden, reached from folded
// clusters.
func TestBootstrapClustersGolden(t *testing.T) {
	_, cs := foldClusters(mixed(60))
	got := BootstrapClusters(cs, Options{Seed: 42})
	want := Interval{0.5965665236051502, 0.6527239876897541}
	if got != want {
		t.Errorf("got {%.17g, %.17g}, want {%.17g, %.17g}", got.Lo, got.Hi, want.Lo, want.Hi)
	}
}

func TestBootstrapClustersRejectsEmptyCluster(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a cluster without verdicts was accepted")
		}
	}()
	BootstrapClusters([]Cluster{{S2: 2, N: 1}, {}}, Options{})
}

func TestTalliesEqualSliceFunctions(t *testing.T) {
	for seed := range uint64(5) {
		vs := randomVerdicts(seed, 50)
		var pt PositionTally
		for _, v := range vs {
			pt.Add(v)
		}
		got, want := pt.Bias(Options{}), MeasurePositionBias(vs, Options{})
		if got.Known != want.Known || got.Decisive != want.Decisive || got.FirstWins != want.FirstWins || got.Ties != want.Ties ||
			got.P != want.P || got.Wilson != want.Wilson || got.Warning != want.Warning || got.SmallN != want.SmallN {
			t.Errorf("seed %d: position tally %+v, want %+v", seed, got, want)
		}

		var pairs []OrderPair
		for i := 0; i+1 < len(vs); i += 2 {
			pairs = append(pairs, OrderPair{Conversation: vs[i].Conversation, Turn: vs[i].Turn, AFirst: vs[i].Outcome, BFirst: vs[i+1].Outcome})
		}
		var ct ConsistencyTally
		var split PositionTally
		for _, p := range pairs {
			ct.Add(p)
			split.AddPair(p)
		}
		gc, wc := ct.Consistency(Options{}), PositionConsistency(pairs, Options{})
		if gc.Pairs != wc.Pairs || gc.Invalid != wc.Invalid || gc.Consistent != wc.Consistent || gc.FirstBoth != wc.FirstBoth ||
			gc.SecondBoth != wc.SecondBoth || !(gc.Rate == wc.Rate || math.IsNaN(gc.Rate) && math.IsNaN(wc.Rate)) || gc.Wilson != wc.Wilson {
			t.Errorf("seed %d: consistency tally %+v, want %+v", seed, gc, wc)
		}
		if gs, ws := split.Bias(Options{}), MeasurePositionBias(SplitOrders(pairs), Options{}); gs.Known != ws.Known || gs.FirstWins != ws.FirstWins || gs.Decisive != ws.Decisive {
			t.Errorf("seed %d: AddPair %+v, SplitOrders %+v", seed, gs, ws)
		}
	}
}
