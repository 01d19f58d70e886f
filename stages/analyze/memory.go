package analyze

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

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

// Trace analyzes every turn t >= from of c with cheatsheet given to step 2
// (as curation would) and returns the trajectory reflection reads: each
// turn's user message, analysis, the decision edit makes of it (nil: NO
// EDIT everywhere) and the logged reply. Outcomes are the caller's to fill
// in. A conversation with no turn from `from` on gives no steps.
func (a *Analyzer) Trace(ctx context.Context, c *conv.Conversation, from int, cheatsheet string, edit func(TurnAnalysis) bool) (Trajectory, Usage, error) {
	var use Usage
	if from < 1 {
		from = 1
	}
	var turns []TurnAnalysis
	for t := from; t <= c.UserTurns(); t++ {
		an, u, err := a.Analyze(ctx, c, t, cheatsheet, 0)
		use.Add(u)
		if err != nil {
			return Trajectory{}, use, err
		}
		turns = append(turns, TurnAnalysis{Turn: t, Analysis: an})
	}
	return Trajectory{Steps: Steps(c, turns, edit)}, use, nil
}

// Absorb is the online memory's update from one conversation's trajectory:
// Reflect (given the current cheatsheet, so it does not repeat it) turns
// it into takeaways and Unify merges them into cheatsheet. It returns the
// new cheatsheet (at most MaxCheatsheetWords words) and the takeaways.
func (a *Analyzer) Absorb(ctx context.Context, tr Trajectory, cheatsheet string) (next, takeaways string, use Usage, err error) {
	takeaways, u, err := a.Reflect(ctx, tr, cheatsheet)
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

// MaxConsolidationWords bounds the takeaways one consolidation reads; a
// learning split whose reflections say more must be made smaller.
const MaxConsolidationWords = 60000

// Consolidate is the offline memory's one consolidation: the takeaways of
// every individual reflection (Reflect with no cheatsheet), in order,
// merged by one Unify call into a cheatsheet of at most MaxCheatsheetWords
// words. Empty takeaways are left out; none at all gives "".
func (a *Analyzer) Consolidate(ctx context.Context, takeaways []string) (string, Usage, error) {
	var b strings.Builder
	n, words := 0, 0
	for _, tk := range takeaways {
		tk = strings.TrimSpace(tk)
		if tk == "" {
			continue
		}
		n++
		words += len(strings.Fields(tk))
		fmt.Fprintf(&b, "From conversation %d:\n%s\n\n", n, tk)
	}
	if n == 0 {
		return "", Usage{}, nil
	}
	if words > MaxConsolidationWords {
		return "", Usage{}, fmt.Errorf("consolidating the cheatsheet: the %d reflections hold %d words, more than one consolidation reads (%d): learn on fewer conversations", n, words, MaxConsolidationWords)
	}
	return a.Unify(ctx, "", strings.TrimSpace(b.String()))
}
