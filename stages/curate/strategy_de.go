package curate

import (
	"context"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/curate/curated"
)

// DeleteEverything is de: the system message and u_t, nothing else.
type DeleteEverything struct{}

// Name returns "de".
func (DeleteEverything) Name() string { return "de" }

// Version returns the version of de's output.
func (DeleteEverything) Version() string { return "1" }

// Contexts builds the de context for each turn t >= from.
func (s DeleteEverything) Contexts(ctx context.Context, c *conv.Conversation, from int, ws *Workspace) ([]curated.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sel, _ := selectTurns(c, from)
	head, headCost := systemHead(c, ws)
	out := make([]curated.Context, 0, len(sel))
	for _, t := range sel {
		parts := append(append(make([]curated.Part, 0, len(head)+1), head...), curated.MessagePart(t.User))
		out = append(out, curated.Context{
			Strategy: s.Name(), Turn: t.Index, Parts: parts, Messages: len(parts),
			Tokens: tokens.ReplyPrimer + headCost + messageCost(c, ws, t.User),
		})
	}
	return out, nil
}
