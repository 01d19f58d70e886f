package run

import (
	"fmt"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/constraints"
	"github.com/ac3/ac3/stages/curate"
)

// BatchRounder is implemented by a stage that can say how many rounds of
// batches its model calls take over a number of conversations, when each
// round answers every request queued in it: the depth of the calls'
// dependencies. why, when not "", says why the rounds grow with the
// conversations (calls that must wait for another conversation's
// answers). Stages implement it by the method alone; they do not import
// this package.
type BatchRounder interface {
	BatchRounds(conversations int64) (rounds int64, why string)
}

// turnRounder is implemented by a stage that can say how many rounds of
// batches one conversation of n user turns takes.
type turnRounder interface {
	BatchRoundsFor(userTurns int) int
}

// sequentialCalls reports whether a stage that says nothing of its rounds
// asks a conversation's calls one after another, each waiting for the one
// before (pipeline.Task.Each with a limit of 1, or a loop over the turns
// that stops at the first call deferred to a batch): then each of the
// conversation's calls takes a round of its own.
func (e *forecaster) sequentialCalls(stage string) bool {
	switch stage {
	case constraints.StageName, curate.StageName:
		// The registry, and a strategy's context at a turn, carry what the
		// answers for the turns before it said.
		return true
	}
	return false
}

// rounds adds to sf's batch rounds what conversation c needs, batched
// being the stage's calls for c that would go through batches.
func (e *forecaster) rounds(sf *StageForecast, c *conv.Conversation, batched int) {
	if batched == 0 {
		return
	}
	sf.batchConvs++
	var n int64
	switch st := sf.stage.(type) {
	case BatchRounder:
		return // counted over the conversations, in finishRounds
	case turnRounder:
		n = int64(st.BatchRoundsFor(c.UserTurns()))
	default:
		n = 1
		if e.sequentialCalls(sf.Stage) {
			n = int64(batched)
		}
	}
	sf.BatchRounds = max(sf.BatchRounds, n)
}

// finishRounds totals the batch rounds: shared stages count as their
// longest, the others add up. It returns the notes that say what the
// figures are.
func (e *forecaster) finishRounds() {
	var shared int64
	var seq []string
	for i := range e.fc.Stages {
		sf := &e.fc.Stages[i]
		if br, ok := sf.stage.(BatchRounder); ok && sf.batchConvs > 0 {
			n, why := br.BatchRounds(sf.batchConvs)
			sf.BatchRounds = n
			if why != "" {
				e.note("%s: %s", sf.Label, why)
			}
		} else if _, ok := sf.stage.(turnRounder); !ok && sf.BatchRounds > 1 && e.sequentialCalls(sf.Stage) {
			seq = append(seq, sf.Label)
		}
		if sf.shared {
			shared = max(shared, sf.BatchRounds)
		} else {
			e.fc.BatchRounds += sf.BatchRounds
		}
	}
	e.fc.BatchRounds += shared
	if e.fc.BatchRounds == 0 {
		return
	}
	for _, label := range seq {
		e.note("batch rounds: %s asks a conversation's calls one after another, each reading the answers before it, so it is counted a round per call of its longest conversation", label)
	}
	e.note("batch rounds are an estimate from the stages' structure: it assumes every batch answers every request and every answer parses the first time; a request a batch leaves unanswered, or an answer asked again, costs a round more")
}

// batchRoundsText is the dry run's line on batch rounds, "" when no call
// goes through batches.
func (fc Forecast) batchRoundsText() string {
	if fc.BatchRounds == 0 {
		return ""
	}
	var shared []string
	var sharedN int64
	var parts []string
	for _, s := range fc.Stages {
		if s.BatchRounds == 0 {
			continue
		}
		if s.shared {
			shared = append(shared, fmt.Sprintf("%s %d", s.Label, s.BatchRounds))
			sharedN = max(sharedN, s.BatchRounds)
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d", s.Label, s.BatchRounds))
	}
	switch len(shared) {
	case 0:
	case 1:
		parts = append([]string{shared[0]}, parts...)
	default:
		parts = append([]string{fmt.Sprintf("%s in %d shared", strings.Join(shared, " + "), sharedN)}, parts...)
	}
	return fmt.Sprintf("batch: about %d rounds of batches (%s), an estimate (see the notes)", fc.BatchRounds, strings.Join(parts, ", "))
}
