package curate

import (
	"context"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/curate/curated"
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
func (s FullContext) Contexts(ctx context.Context, c *conv.Conversation, from int, ws *Workspace) ([]curated.Context, error) {
	sel, view, cost, err := messageView(ctx, c, from, ws, nil)
	if err != nil || len(sel) == 0 {
		return nil, err
	}
	head, headCost := systemHead(c, ws)
	return prefixContexts(s.Name(), sel, head, headCost, view, cost), nil
}
