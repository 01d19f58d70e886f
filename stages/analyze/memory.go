package analyze

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/ac3/ac3/pipeline/conv"
)

// MemoryHash identifies a cheatsheet in unit keys ("" for no cheatsheet).
func MemoryHash(cheatsheet string) string {
	if cheatsheet == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(cheatsheet))
	return hex.EncodeToString(sum[:6])
}

// Learn updates a cheatsheet with one conversation: it analyzes every turn
// t >= from (step 2 given the current cheatsheet, as it would be during
// curation), reflects on that trajectory, and merges the takeaways in. It
// returns the new cheatsheet; a conversation with no turn to analyze leaves
// it unchanged.
//
// Feeding conversations to Learn in a fixed order (ingest order) makes the
// result deterministic: every request depends only on the conversation and
// the cheatsheet before it, and the run's cache answers repeated requests, so
// learning again after an interruption replays what was done at no cost.
func (a *Analyzer) Learn(ctx context.Context, c *conv.Conversation, from int, cheatsheet string) (string, Usage, error) {
	var use Usage
	if from < 1 {
		from = 1
	}
	var traj []TurnAnalysis
	for t := from; t <= c.UserTurns(); t++ {
		an, u, err := a.Analyze(ctx, c, t, cheatsheet, 0)
		use.Add(u)
		if err != nil {
			return cheatsheet, use, err
		}
		traj = append(traj, TurnAnalysis{Turn: t, Analysis: an})
	}
	if len(traj) == 0 {
		return cheatsheet, use, nil
	}
	next, _, u, err := a.Absorb(ctx, traj, cheatsheet)
	use.Add(u)
	if err != nil {
		return cheatsheet, use, err
	}
	return next, use, nil
}

// Absorb is the memory's update from one conversation's analysis trajectory:
// Reflect turns it into takeaways and Unify merges them into cheatsheet. It
// returns the new cheatsheet (at most MaxCheatsheetWords words) and the
// takeaways. Learn (offline) and the online regime in stages/curate both
// update the cheatsheet through it, so the two regimes learn alike.
func (a *Analyzer) Absorb(ctx context.Context, traj []TurnAnalysis, cheatsheet string) (next, takeaways string, use Usage, err error) {
	takeaways, u, err := a.Reflect(ctx, traj, cheatsheet)
	use.Add(u)
	if err != nil {
		return cheatsheet, "", use, err
	}
	next, u, err = a.Unify(ctx, cheatsheet, takeaways)
	use.Add(u)
	if err != nil {
		return cheatsheet, takeaways, use, err
	}
	return next, takeaways, use, nil
}
