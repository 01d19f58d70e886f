package curate

import (
	"context"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/curate/curated"
)

// selectTurns returns the turns of c numbered from or later (from < 1 counts
// as 1) and all of c's turns.
func selectTurns(c *conv.Conversation, from int) (sel, all []conv.Turn) {
	all = c.Turns()
	if from < 1 {
		from = 1
	}
	if from > len(all) {
		return nil, all
	}
	return all[from-1:], all
}

// systemHead is the opening every strategy keeps: the conversation's system
// message when it has one. Keeping it everywhere means a comparison between
// strategies varies the history only, never the operator's instructions.
func systemHead(c *conv.Conversation, ws *Workspace) ([]curated.Part, int) {
	if c.System == "" {
		return nil, 0
	}
	return []curated.Part{curated.SystemPart()}, ws.Cost(conv.System, ws.System())
}

// messageCost is what original message i costs in a request.
func messageCost(c *conv.Conversation, ws *Workspace, i int) int {
	return ws.Cost(c.Messages[i].Role, ws.Message(i))
}

// messageView is the start fc, filler and ao share: the turns numbered from
// or later and, for every message up to the last of their user messages,
// the part that stands for it in a context and its cost. alt (nil: none)
// may put something else in message i's place, called in message order;
// ok false keeps the message as logged. sel is empty when there is no
// such turn.
func messageView(ctx context.Context, c *conv.Conversation, from int, ws *Workspace, alt func(i int) (p curated.Part, cost int, ok bool)) (sel []conv.Turn, view []curated.Part, cost []int, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	sel, _ = selectTurns(c, from)
	if len(sel) == 0 {
		return nil, nil, nil, nil
	}
	last := sel[len(sel)-1].User
	view = make([]curated.Part, last+1)
	cost = make([]int, last+1)
	for i := range view {
		if alt != nil {
			if p, n, ok := alt(i); ok {
				view[i], cost[i] = p, n
				continue
			}
		}
		view[i] = curated.MessagePart(i)
		cost[i] = messageCost(c, ws, i)
	}
	return sel, view, cost, nil
}

// prefixContexts builds, for each turn in sel, the context head + view[0..u_t]
// where view[i] stands for original message i and costs cost[i]. All contexts
// share one backing array (each is a capped prefix of it) and totals are
// running sums, so the work is linear in the conversation.
func prefixContexts(name string, sel []conv.Turn, head []curated.Part, headCost int, view []curated.Part, cost []int) []curated.Context {
	if len(sel) == 0 {
		return nil
	}
	last := sel[len(sel)-1].User
	parts := make([]curated.Part, 0, len(head)+last+1)
	parts = append(parts, head...)
	parts = append(parts, view[:last+1]...)
	headMsgs := curated.MessageCount(head)
	out := make([]curated.Context, 0, len(sel))
	sum, next := tokens.ReplyPrimer+headCost, 0
	for _, t := range sel {
		for ; next <= t.User; next++ {
			sum += cost[next]
		}
		n := len(head) + t.User + 1
		out = append(out, curated.Context{Strategy: name, Turn: t.Index, Parts: parts[:n:n], Tokens: sum, Messages: headMsgs + t.User + 1})
	}
	return out
}

// isAssistantSide reports whether a message is the assistant's own output or
// the result of its tool calls. Strategies that hide the assistant treat both
// alike: a tool result is produced by the assistant's actions and can anchor a
// respondent just as its prose can.
func isAssistantSide(r conv.Role) bool { return r == conv.Assistant || r == conv.Tool }
