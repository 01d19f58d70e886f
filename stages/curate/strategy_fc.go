package curate

import (
	"context"

	"github.com/ac3/ac3/pipeline/conv"
)

// FullContext is fc: the system message and every message before u_t, then
// u_t, exactly as logged (tool messages and mid-conversation system messages
// included). It is C_t, the baseline every other strategy is compared with.
type FullContext struct{}

// Name returns "fc".
func (FullContext) Name() string { return "fc" }

// Version returns the version of fc's output.
func (FullContext) Version() string { return "1" }

// Contexts builds C_t for each turn t >= from.
func (s FullContext) Contexts(ctx context.Context, c *conv.Conversation, from int, tc *TokenCache) ([]Context, error) {
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
		view[i] = MessagePart(i)
		cost[i] = messageCost(c, tc, i)
	}
	head, headCost := systemHead(c, tc)
	return prefixContexts(s.Name(), sel, head, headCost, view, cost), nil
}
