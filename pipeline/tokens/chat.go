package tokens

import "github.com/ac3/ac3/pipeline/conv"

// The chat framing rule follows the counting recipe in OpenAI's cookbook for
// current chat models: each message costs its content, its role name and
// PerMessage control tokens (the start marker, the separator after the role
// and the end marker); the whole request then costs ReplyPrimer more for the
// tokens that open the assistant's reply. It is an estimate of what the
// endpoint bills, exact for OpenAI's models as far as the cookbook goes and
// close for other chat templates, and it is the one rule ac3 uses everywhere
// so totals from different stages add up.
const (
	PerMessage  = 3
	ReplyPrimer = 3
)

// Framing returns the tokens a message of the given role costs beyond its
// content: PerMessage plus the tokens of the role name. For the standard
// roles this is 4 in every supported encoding.
func (c *Counter) Framing(role string) int {
	if n, ok := c.framing[role]; ok {
		return n
	}
	return PerMessage + c.Count(role)
}

// MessageCost returns what one chat message costs given its content's token
// count.
func (c *Counter) MessageCost(role string, contentTokens int) int {
	return contentTokens + c.Framing(role)
}

// Total returns the tokens of a chat request whose messages cost the given
// amounts (each already including its framing, see MessageCost): their sum
// plus the reply primer. An empty request still costs the primer.
func Total(messageCosts ...int) int {
	n := ReplyPrimer
	for _, m := range messageCosts {
		n += m
	}
	return n
}

// CountMessages counts a chat request from scratch: every message's content
// and framing, plus the reply primer. Prefer MessageCost and Total when the
// per-message counts are already known.
func (c *Counter) CountMessages(msgs []conv.Message) int {
	n := ReplyPrimer
	for _, m := range msgs {
		n += c.MessageCost(string(m.Role), c.Count(m.Content))
	}
	return n
}
