package stats

import (
	"math"
	"testing"
)

func TestMeasurePositionBias(t *testing.T) {
	// 2 decisive verdicts won by the first-shown response, 8 by the second,
	// 3 ties, and 2 verdicts with no recorded position (skipped).
	var vs []Verdict
	add := func(o Outcome, first Side, n int) {
		for range n {
			vs = append(vs, Verdict{Conversation: "c", Outcome: o, FirstShown: first})
		}
	}
	add(AWins, SideA, 1) // first won
	add(BWins, SideB, 1) // first won
	add(AWins, SideB, 5) // second won
	add(BWins, SideA, 3) // second won
	add(Tie, SideA, 3)
	add(AWins, SideUnknown, 2)

	pb := MeasurePositionBias(vs, Options{})
	if pb.Known != 13 || pb.Ties != 3 || pb.Decisive != 10 || pb.FirstWins != 2 {
		t.Fatalf("counts %+v", pb)
	}
	if pb.FirstShare != 0.2 {
		t.Errorf("share %v, want 0.2", pb.FirstShare)
	}
	// 2 of 10: 2·(1 + 10 + 45)/1024.
	if pb.P != 0.109375 {
		t.Errorf("p %v, want 0.109375", pb.P)
	}
	// Wilson(2, 10) mirrors Wilson(8, 10).
	if math.Abs(pb.Wilson.Lo-(1-0.9433178485456247)) > 1e-12 || math.Abs(pb.Wilson.Hi-(1-0.49016247153664183)) > 1e-12 {
		t.Errorf("Wilson %+v", pb.Wilson)
	}
	if !pb.SmallN || pb.Warning == "" {
		t.Errorf("10 decisive verdicts must be flagged: %+v", pb)
	}

	none := MeasurePositionBias(verdicts("c", AWins, 3), Options{})
	if none.Known != 0 || !math.IsNaN(none.FirstShare) || none.P != 1 || none.Warning == "" {
		t.Errorf("unknown positions: %+v", none)
	}
}

func TestCombine(t *testing.T) {
	tests := []struct {
		aFirst, bFirst Outcome
		want           Outcome
		consistent     bool
	}{
		{AWins, AWins, AWins, true},
		{BWins, BWins, BWins, true},
		{Tie, Tie, Tie, true},
		{AWins, BWins, Tie, false}, // first shown won both times
		{BWins, AWins, Tie, false}, // second shown won both times
		{AWins, Tie, Tie, false},
		{Tie, BWins, Tie, false},
		{0, AWins, 0, false},
		{AWins, Outcome(7), 0, false},
	}
	for _, tt := range tests {
		got, ok := Combine(tt.aFirst, tt.bFirst)
		if got != tt.want || ok != tt.consistent {
			t.Errorf("Combine(%v, %v) = %v, %v; want %v, %v", tt.aFirst, tt.bFirst, got, ok, tt.want, tt.consistent)
		}
	}
}

func TestBothOrders(t *testing.T) {
	pairs := []OrderPair{
		{Conversation: "a", Turn: 2, TurnType: "new_ask", AFirst: AWins, BFirst: AWins},
		{Conversation: "a", Turn: 3, AFirst: AWins, BFirst: BWins}, // first wins both
		{Conversation: "b", Turn: 2, AFirst: BWins, BFirst: AWins}, // second wins both
		{Conversation: "b", Turn: 3, AFirst: BWins, BFirst: AWins}, // second wins both
		{Conversation: "c", Turn: 2, AFirst: Tie, BFirst: Tie},
		{Conversation: "c", Turn: 3, AFirst: AWins, BFirst: Tie},
		{Conversation: "d", Turn: 2, AFirst: 0, BFirst: Tie},
	}

	combined := CombineOrders(pairs)
	c := Tally(combined)
	if c != (Counts{Wins: 1, Ties: 5, N: 6, Invalid: 1}) {
		t.Errorf("combined counts %+v", c)
	}
	if v := combined[0]; v.Conversation != "a" || v.Turn != 2 || v.TurnType != "new_ask" || v.FirstShown != SideUnknown {
		t.Errorf("combined verdict lost its identity: %+v", v)
	}

	pc := PositionConsistency(pairs, Options{})
	want := Consistency{Pairs: 6, Invalid: 1, Consistent: 2, FirstBoth: 1, SecondBoth: 2}
	if pc.Pairs != want.Pairs || pc.Invalid != want.Invalid || pc.Consistent != want.Consistent ||
		pc.FirstBoth != want.FirstBoth || pc.SecondBoth != want.SecondBoth {
		t.Errorf("consistency %+v, want counts %+v", pc, want)
	}
	if math.Abs(pc.Rate-1.0/3) > 1e-15 || pc.Wilson != Wilson(2, 6, 0.95) {
		t.Errorf("rate %v, Wilson %+v", pc.Rate, pc.Wilson)
	}

	split := SplitOrders(pairs)
	if len(split) != 2*len(pairs) || split[0].FirstShown != SideA || split[1].FirstShown != SideB {
		t.Fatalf("split %+v", split)
	}
	// Decisive single-order verdicts: pair 1 gives 1 first + 1 second win,
	// pair 2 gives 2 first wins, pairs 3-4 give 4 second wins, pair 6 gives
	// 1 first win (A shown first won), pair 7 gives nothing valid decisive.
	pb := MeasurePositionBias(split, Options{})
	if pb.Decisive != 9 || pb.FirstWins != 4 {
		t.Errorf("position bias from split orders: %+v", pb)
	}
}
