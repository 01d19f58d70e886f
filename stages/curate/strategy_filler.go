package curate

import (
	"context"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
)

// fillerVersion changes whenever fillerSentences or the way words are drawn
// from them changes.
const fillerVersion = "1"

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
type Filler struct{}

// Name returns "filler".
func (Filler) Name() string { return "filler" }

// Version returns the version of filler's output.
func (Filler) Version() string { return fillerVersion }

// Contexts builds the filler context for each turn t >= from.
func (s Filler) Contexts(ctx context.Context, c *conv.Conversation, from int, tc *TokenCache) ([]Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sel, _ := selectTurns(c, from)
	if len(sel) == 0 {
		return nil, nil
	}
	last := sel[len(sel)-1].User
	view := make([]Part, last+1)
	cost := make([]int, last+1)
	for i := range view {
		m := c.Messages[i]
		if target := tc.Message(i); isAssistantSide(m.Role) && target > 0 {
			w := fitFiller(tc.fill, i, target)
			view[i] = FillerPart(i, w)
			cost[i] = tc.Cost(m.Role, tc.fill(i, w))
			continue
		}
		view[i] = MessagePart(i)
		cost[i] = messageCost(c, tc, i)
	}
	head, headCost := systemHead(c, tc)
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

// fillerText returns the first words words of the filler stream for message
// i of conversation id: the sentences fillerStream picks, cut after words
// words.
func fillerText(id string, i, words int) string {
	var b strings.Builder
	n := 0
	for k := range fillerStream(id, i) {
		if n >= words {
			break
		}
		for w := range strings.FieldsSeq(fillerSentences[k]) {
			if n == words {
				break
			}
			if n > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(w)
			n++
		}
	}
	return b.String()
}
