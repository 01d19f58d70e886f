package curate

import (
	"context"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/curate/curated"
)

// Filler is the filler diagnostic: fc with each earlier assistant or tool
// message replaced by neutral text about as long in tokens, keeping its
// role. If a model does worse with its real replies than with filler of the
// same length, the harm comes from what the replies say, not from their
// length.
//
// The filler for message i of a conversation is the first w words of a word
// stream seeded by a hash of (conversation id, i), with w chosen so its token
// count is as close as possible to message i's. It is therefore the same in
// every turn's context and in every run with the same encoding. Empty
// messages are kept as they are; there is nothing to match.
//
// With Options' corpora (Huang et al.'s setting: Wikipedia passages, and
// code for code carryover) the filler is instead a cut of a passage
// stream from the corpus, stored as literal text (see corpusContexts).
type Filler struct {
	Options FillerOptions
}

// Name returns "filler".
func (Filler) Name() string { return "filler" }

// Version returns the version of filler's output.
func (s Filler) Version() string { return s.Options.version() }

// Contexts builds the filler context for each turn t >= from.
func (s Filler) Contexts(ctx context.Context, c *conv.Conversation, from int, ws *Workspace) ([]curated.Context, error) {
	if s.Options.Text != nil || s.Options.Code != nil {
		return s.corpusContexts(ctx, c, from, ws)
	}
	sel, view, cost, err := messageView(ctx, c, from, ws, func(i int) (curated.Part, int, bool) {
		m := c.Messages[i]
		target := ws.Message(i)
		if !isAssistantSide(m.Role) || target <= 0 {
			return curated.Part{}, 0, false
		}
		w := fitFiller(ws.fill, i, target)
		return curated.FillerPart(i, w), ws.Cost(m.Role, ws.fill(i, w)), true
	})
	if err != nil || len(sel) == 0 {
		return nil, err
	}
	head, headCost := systemHead(c, ws)
	return prefixContexts(s.Name(), sel, head, headCost, view, cost), nil
}

// fitFiller returns the word count whose filler for message i comes closest
// to target tokens. Filler tokens grow almost linearly with words, so a
// proportional guess followed by a few corrections lands within a token or
// two. count(i, w) is the token count of message i's filler cut at w words.
func fitFiller(count func(i, w int) int, i, target int) int {
	const maxTries = 6
	w := max(1, target*3/4) // English prose runs about 4 tokens per 3 words
	best, bestDiff := w, -1
	tried := map[int]bool{}
	for range maxTries {
		tried[w] = true
		n := count(i, w)
		diff := abs(n - target)
		if bestDiff < 0 || diff < bestDiff || (diff == bestDiff && w < best) {
			best, bestDiff = w, diff
		}
		if diff == 0 {
			break
		}
		next := max(1, w+(target-n)*w/max(n, 1))
		if next == w {
			next = w + sign(target-n)
		}
		if next < 1 || tried[next] {
			break
		}
		w = next
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func sign(x int) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}
