package curate

import (
	"context"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/curate/curated"
)

// ConcatUser is concat: the system message, then one user message holding
// u_1 … u_t in order, separated by a blank line (JoinSeparator). Assistant,
// tool and mid-conversation system messages are dropped. User messages are
// joined as written, without trimming, so the parts stay references.
//
// The joined message's tokens are counted whole for every turn, because
// tokens do not add up across a join: this strategy tokenizes the user text
// about t/2 times over, which is cheap for chat-length conversations but
// grows with the square of the number of user turns.
type ConcatUser struct{}

// Name returns "concat".
func (ConcatUser) Name() string { return "concat" }

// Version returns the version of concat's output.
func (ConcatUser) Version() string { return "1" }

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
	last := sel[len(sel)-1].Index
	parts := make([]curated.Part, 0, len(head)+last)
	parts = append(parts, head...)
	for k := range last {
		p := curated.MessagePart(all[k].User)
		p.Join = k > 0
		parts = append(parts, p)
	}
	out := make([]curated.Context, 0, len(sel))
	for _, t := range sel {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := len(head) + t.Index
		var content int
		if t.Index == 1 {
			content = ws.Message(t.User)
		} else {
			content = ws.Counter().Count(curated.GroupContent(c, parts[len(head):n]))
		}
		out = append(out, curated.Context{
			Strategy: s.Name(), Turn: t.Index, Parts: parts[:n:n], Messages: len(head) + 1,
			Tokens: tokens.ReplyPrimer + headCost + ws.Cost(conv.User, content),
		})
	}
	return out, nil
}
