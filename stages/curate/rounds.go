package curate

import (
	"fmt"

	"github.com/ac3/ac3/stages/curate/curated"
)

// BatchRounds is how many batch rounds the stage takes in batch mode over
// the given number of conversations when every answer parses the first
// time (a malformed answer is asked again, a round later), and, when that
// number grows with the conversations, why.
//
// Every call whose inputs are known is asked in the same pass, across the
// conversations, turns and strategies of the stage, so the rounds are the
// depth of the calls' dependencies, whatever the length of the
// conversations: the analysis' two steps (one for the single-pass
// ablation), then the rewrite call that reads the analysis; the summaries
// of sum in the first round. Nothing else reads an earlier answer of the
// same conversation: every turn's analysis is made over the logged history,
// and the gated-reset cap is applied once the gate answers are in.
func (s *Stage) BatchRounds(conversations int64) (rounds int64, sequential string) {
	if conversations <= 0 {
		return 0, ""
	}
	n := 0
	for _, st := range s.order {
		n = max(n, strategyRounds(st))
	}
	return int64(n), ""
}

// strategyRounds is the depth of st's model calls.
func strategyRounds(st Strategy) int {
	switch v := st.(type) {
	case *constraintsOverlay:
		return strategyRounds(v.inner)
	case *Operator:
		return operatorRounds(v.op, v.an.Depth())
	case *onlineOperator:
		return operatorRounds(v.op, v.an.Depth())
	case *Summarized, *LLMCompact:
		return 1
	case *ExtractSC:
		return strategyRounds(v.inner)
	case *Adaptive:
		if v.opts.Policy == PolicyScored && v.opts.Fitted.Paper() {
			return 1 // the turns' embeddings, all in one round
		}
	}
	return 0
}

func operatorRounds(op string, analysis int) int {
	if op == curated.OpRewrite {
		return analysis + 1
	}
	return analysis
}

// BatchRounds is Stage.BatchRounds for a stage with the online memory,
// which is sequential by design: a conversation's step 2 reads the
// cheatsheet the conversation before it left, which its reflection and
// unify calls made. What reads no cheatsheet (step 1 of every analysis,
// the strategies without the memory) is asked for every conversation in
// the first round; then each conversation takes a round for its step 2
// (none for the single-pass ablation), one for its reflection and one for
// its unify call, and a last round answers the final conversation's
// rewrite calls.
func (s *OnlineStage) BatchRounds(conversations int64) (rounds int64, sequential string) {
	rounds, _ = s.Stage.BatchRounds(conversations)
	if conversations <= 0 {
		return 0, ""
	}
	online, rewrite := false, false
	for _, st := range s.order {
		if UsesOnlineMemory(st) {
			online = true
			rewrite = rewrite || st.Name() == curated.OpRewrite || st.Name() == curated.OpRewrite+"+constraints"
		}
	}
	if !online {
		return rounds, ""
	}
	per := int64(s.mem.Analyzer().Depth() - 1 + 2)
	chain := 1 + per*conversations
	if rewrite {
		chain++
	}
	return max(rounds, chain), fmt.Sprintf("the online memory learns one conversation at a time: each one's step 2, reflection and unify wait for the cheatsheet of the one before it (%d rounds per conversation)", per)
}
