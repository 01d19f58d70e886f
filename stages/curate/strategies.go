package curate

import (
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/tokens"
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
func systemHead(c *conv.Conversation, tc *TokenCache) ([]Part, int) {
	if c.System == "" {
		return nil, 0
	}
	return []Part{SystemPart()}, tc.Cost(conv.System, tc.System())
}

// messageCost is what original message i costs in a request.
func messageCost(c *conv.Conversation, tc *TokenCache, i int) int {
	return tc.Cost(c.Messages[i].Role, tc.Message(i))
}

// prefixContexts builds, for each turn in sel, the context head + view[0..u_t]
// where view[i] stands for original message i and costs cost[i]. All contexts
// share one backing array (each is a capped prefix of it) and totals are
// running sums, so the work is linear in the conversation.
func prefixContexts(name string, sel []conv.Turn, head []Part, headCost int, view []Part, cost []int) []Context {
	if len(sel) == 0 {
		return nil
	}
	last := sel[len(sel)-1].User
	parts := make([]Part, 0, len(head)+last+1)
	parts = append(parts, head...)
	parts = append(parts, view[:last+1]...)
	headMsgs := messageCount(head)
	out := make([]Context, 0, len(sel))
	sum, next := tokens.ReplyPrimer+headCost, 0
	for _, t := range sel {
		for ; next <= t.User; next++ {
			sum += cost[next]
		}
		n := len(head) + t.User + 1
		out = append(out, Context{Strategy: name, Turn: t.Index, Parts: parts[:n:n], Tokens: sum, Messages: headMsgs + t.User + 1})
	}
	return out
}

// isAssistantSide reports whether a message is the assistant's own output or
// the result of its tool calls. Strategies that hide the assistant treat both
// alike: a tool result is produced by the assistant's actions and can anchor a
// respondent just as its prose can.
func isAssistantSide(r conv.Role) bool { return r == conv.Assistant || r == conv.Tool }
