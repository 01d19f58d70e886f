package conv

// Turn is user turn t of a conversation (1-based) and the messages that answer
// it. A turn starts at a user message and runs until the next user message;
// Reply is the index in Messages of the first assistant message of the turn,
// or -1 when the user message got no assistant reply (a trailing question, or
// two user messages in a row).
type Turn struct {
	Index int // t, 1-based
	User  int // index in Messages of u_t
	Reply int // index in Messages of a_t, or -1
	End   int // index one past the last message of the turn
}

// Turns numbers the user turns of c. Messages before the first user message
// (a greeting, a mid-stream system note) belong to no turn.
func (c *Conversation) Turns() []Turn {
	var turns []Turn
	for i, m := range c.Messages {
		switch m.Role {
		case User:
			if len(turns) > 0 {
				turns[len(turns)-1].End = i
			}
			turns = append(turns, Turn{Index: len(turns) + 1, User: i, Reply: -1, End: len(c.Messages)})
		case Assistant:
			if k := len(turns) - 1; k >= 0 && turns[k].Reply < 0 {
				turns[k].Reply = i
			}
		}
	}
	return turns
}

// UserTurns reports how many user messages c has.
func (c *Conversation) UserTurns() int {
	n := 0
	for _, m := range c.Messages {
		if m.Role == User {
			n++
		}
	}
	return n
}

// UserTurn returns u_t, the t-th user message (1-based).
func (c *Conversation) UserTurn(t int) (Message, bool) {
	for _, tr := range c.Turns() {
		if tr.Index == t {
			return c.Messages[tr.User], true
		}
	}
	return Message{}, false
}

// ContextBefore returns C_t, everything a respondent sees before writing the
// assistant turn that answers u_t: the system message (as a system Message)
// and every message up to and including u_t. It reports false if c has fewer
// than t user turns. The returned slice is a fresh copy.
func (c *Conversation) ContextBefore(t int) ([]Message, bool) {
	for _, tr := range c.Turns() {
		if tr.Index == t {
			out := make([]Message, 0, tr.User+2)
			if c.System != "" {
				out = append(out, Message{Role: System, Content: c.System})
			}
			return append(out, c.Messages[:tr.User+1]...), true
		}
	}
	return nil, false
}
