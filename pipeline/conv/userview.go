package conv

// UserView is the user-only prefix U_t of a conversation: the system message
// and the user messages u_1..u_t, nothing else.
//
// It is how structural exclusion is enforced: the AC3 specification extractor
// (and any other step that must not be anchored by the assistant's own words)
// takes a UserView, and a UserView has no field that can hold assistant or
// tool text. Its fields are unexported and the only constructor, NewUserView,
// copies messages whose role is User. Code outside this package cannot build
// one from arbitrary strings.
type UserView struct {
	system string
	users  []string
}

// NewUserView returns U_t for conversation c: its system message and its first
// t user messages. A t larger than the number of user turns gives all of them;
// t <= 0 gives none.
func NewUserView(c *Conversation, t int) UserView {
	v := UserView{system: c.System}
	for _, m := range c.Messages {
		if len(v.users) >= t {
			break
		}
		if m.Role == User {
			v.users = append(v.users, m.Content)
		}
	}
	return v
}

// System returns the system message, or "" when there is none.
func (v UserView) System() string { return v.system }

// Len reports t, the number of user messages in the view.
func (v UserView) Len() int { return len(v.users) }

// User returns u_i (1-based).
func (v UserView) User(i int) string { return v.users[i-1] }

// Users returns a copy of u_1..u_t in order.
func (v UserView) Users() []string { return append([]string(nil), v.users...) }

// Messages returns the view as chat messages (a system message when there is
// one, then one user message per turn), ready to be placed in a prompt.
func (v UserView) Messages() []Message {
	out := make([]Message, 0, len(v.users)+1)
	if v.system != "" {
		out = append(out, Message{Role: System, Content: v.system})
	}
	for _, u := range v.users {
		out = append(out, Message{Role: User, Content: u})
	}
	return out
}
