package curate

import (
	"fmt"

	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/curate/memory"
)

// Gate is when an AC3 operator may act.
//
// Floor counts user turns, numbered from 1 as conv.Turn.Index numbers them:
// the operator does not act at turns 1..Floor, and may act from turn
// Floor+1. Floor 0 lets it act at every curated turn; floor 1 skips exactly
// the first user turn (the AC3 paper's Gated Reset on WildChat, LiC actions
// and tau2-bench, Section 3.2); floor 2 skips the first two (its Gated Reset
// elsewhere). Turn 1 has no history, so with the usual first curated turn
// DefaultFrom = 2, floors 0 and 1 give the same contexts (their versions
// still differ). For augment the floor is its warm-up W: it appends from
// turn W+1 on (the paper's CollabLLM runs start augment and rewrite at the
// fourth user turn, floor 3, and reset at the second, floor 1).
//
// Cap applies to the operators that remove content (reset, gated-reset,
// rewrite): it is how many turns of one conversation the operator may
// replace the history at, counted in turn order over the curated turns;
// once reached, the operator stops analyzing and acting for the rest of the
// conversation. 0 means no cap. The paper caps Gated Reset at 3 per
// conversation and runs Reset and Rewrite uncapped.
type Gate struct {
	Floor int
	Cap   int
}

// DefaultGate returns an operator's default gate: gated-reset skips the
// first 2 user turns and resets at most 3 times (the paper's general
// setting; its WildChat, LiC-actions and tau2-bench runs use floor 1);
// augment warms up for 2 turns; reset and rewrite act from the first
// curated turn with no cap.
func DefaultGate(op string) Gate {
	switch op {
	case curated.OpGatedReset:
		return Gate{Floor: 2, Cap: 3}
	case curated.OpAugment:
		return Gate{Floor: 2}
	}
	return Gate{}
}

// Decider returns the decisions operator op with gate g makes over one
// conversation, turn by turn from its analyses (call it in turn order, a
// fresh one per conversation): augment edits (appends) at every turn past
// its warm-up; reset, gated-reset and rewrite edit at a turn past the floor
// when the analysis finds issues, until the cap.
func Decider(op string, g Gate) func(analyze.TurnAnalysis) bool {
	edits := 0
	return func(t analyze.TurnAnalysis) bool {
		switch {
		case t.Turn <= g.Floor:
			return false
		case op == curated.OpAugment:
			return true
		case g.Cap > 0 && edits >= g.Cap, !t.HasIssues():
			return false
		}
		edits++
		return true
	}
}

// Decisions are operator op's decisions under gate g as offline memory
// learning shows them to its reflections (memory.LearnOptions).
func Decisions(op string, g Gate) memory.Decisions {
	return memory.Decisions{
		Name: fmt.Sprintf("%s floor=%d cap=%d", op, g.Floor, g.Cap),
		New:  func() func(analyze.TurnAnalysis) bool { return Decider(op, g) },
	}
}
