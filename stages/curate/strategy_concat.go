package curate

import (
	"context"
	"slices"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/curate/curated"
)

// ConcatUser is concat: the system message, then one user message holding
// u_1 … u_t in order, separated by a blank line (JoinSeparator). Assistant,
// tool and mid-conversation system messages are dropped. User messages are
// joined as written, without trimming, so the parts stay references.
//
// When user messages up to t carry the text they were worded from
// (conv.Message.Original: a simulated user rephrased a task's pieces), the
// joined message is made of those originals instead, as Laban et al.'s
// Concat User joins the pieces themselves, not the simulator's wording; a
// user message worded from nothing (the simulator's small talk) then adds
// nothing. Originals are literal parts, so such contexts store their text.
//
// The joined message's tokens are counted whole for every turn, because
// tokens do not add up across a join: this strategy tokenizes the user text
// about t/2 times over, which is cheap for chat-length conversations but
// grows with the square of the number of user turns.
type ConcatUser struct{}

// Name returns "concat".
func (ConcatUser) Name() string { return "concat" }

// Version returns the version of concat's output: 2 joins the messages'
// originals when they have them.
func (ConcatUser) Version() string { return "2" }

// Contexts builds the concat context for each turn t >= from.
func (s ConcatUser) Contexts(ctx context.Context, c *conv.Conversation, from int, ws *Workspace) ([]curated.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sel, all := selectTurns(c, from)
	if len(sel) == 0 {
		return nil, nil
	}
	head, headCost := systemHead(c, ws)
	out := make([]curated.Context, 0, len(sel))
	for _, t := range sel {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		parts, plain := concatParts(c, all[:t.Index])
		parts = append(slices.Clip(head), parts...)
		var content int
		if plain && t.Index == 1 {
			content = ws.Message(t.User)
		} else {
			content = ws.Counter().Count(curated.GroupContent(c, parts[len(head):]))
		}
		out = append(out, curated.Context{
			Strategy: s.Name(), Turn: t.Index, Parts: parts, Messages: len(head) + 1,
			Tokens: tokens.ReplyPrimer + headCost + ws.Cost(conv.User, content),
		})
	}
	return out, nil
}

// concatParts is the joined user message of turns: references to the user
// messages (plain), or, when any of them has an original, the originals as
// literal parts.
func concatParts(c *conv.Conversation, turns []conv.Turn) (parts []curated.Part, plain bool) {
	plain = !slices.ContainsFunc(turns, func(t conv.Turn) bool { return c.Messages[t.User].Original != "" })
	for _, t := range turns {
		p := curated.MessagePart(t.User)
		if !plain {
			o := c.Messages[t.User].Original
			if o == "" {
				continue
			}
			p = curated.TextPart(conv.User, o)
		}
		p.Join = len(parts) > 0
		parts = append(parts, p)
	}
	return parts, plain
}
