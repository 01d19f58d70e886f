package curate

import (
	"context"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/curate/curated"
)

// LastTurn is lt: the system message, the previous exchange (u_{t-1} and
// everything that answered it: assistant replies, tool messages), then u_t.
// When u_{t-1} got no reply the exchange is u_{t-1} alone; at t = 1 there is
// no previous exchange and the context is u_1 alone.
type LastTurn struct{}

// Name returns "lt".
func (LastTurn) Name() string { return "lt" }

// Version returns the version of lt's output.
func (LastTurn) Version() string { return "1" }

// Contexts builds the lt context for each turn t >= from.
func (s LastTurn) Contexts(ctx context.Context, c *conv.Conversation, from int, ws *Workspace) ([]curated.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sel, all := selectTurns(c, from)
	head, headCost := systemHead(c, ws)
	out := make([]curated.Context, 0, len(sel))
	for _, t := range sel {
		start := t.User
		if t.Index > 1 {
			start = all[t.Index-2].User
		}
		parts := make([]curated.Part, 0, len(head)+t.User-start+1)
		parts = append(parts, head...)
		sum := tokens.ReplyPrimer + headCost
		for i := start; i <= t.User; i++ {
			parts = append(parts, curated.MessagePart(i))
			sum += messageCost(c, ws, i)
		}
		out = append(out, curated.Context{Strategy: s.Name(), Turn: t.Index, Parts: parts, Tokens: sum, Messages: len(parts)})
	}
	return out, nil
}
