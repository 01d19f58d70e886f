package curated

import (
	"fmt"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
)

// Special values of Part.Ref. Non-negative values are indexes into
// Conversation.Messages.
const (
	// RefSystem stands for the conversation's system message (Conversation.System).
	RefSystem = -1
	// RefText marks a literal part whose content is Part.Text.
	RefText = -2
)

// JoinSeparator goes between the contents of parts that Materialize joins
// into one message: a blank line, which reads as a paragraph break to a model
// and never glues the last word of one part to the first of the next.
const JoinSeparator = "\n\n"

// Part is one piece of a curated context. It is one of:
//
//   - a reference to original message Ref (Ref >= 0; Role and Text empty);
//   - the conversation's system message (Ref == RefSystem);
//   - literal text Text with role Role (Ref == RefText);
//   - neutral filler standing in for message Ref (Ref >= 0, Fill > 0): the
//     first Fill words of the filler stream for (conversation id, Ref), with
//     the role of the message it replaces. Storing the word count instead of
//     the text keeps filler contexts as small as the others.
//
// A part with Join set is appended to the previous part's message (after
// JoinSeparator) instead of starting a new message; both must have the same
// role. That is how concat folds user turns into one message and how ao puts
// its note into the system message, without copying any original text.
type Part struct {
	Role conv.Role `json:"role,omitempty"`
	Ref  int       `json:"ref"`
	Text string    `json:"text,omitempty"`
	Fill int       `json:"fill,omitempty"`
	Join bool      `json:"join,omitempty"`
}

// MessagePart refers to original message i.
func MessagePart(i int) Part { return Part{Ref: i} }

// SystemPart refers to the conversation's system message.
func SystemPart() Part { return Part{Ref: RefSystem} }

// TextPart is literal text with a role.
func TextPart(role conv.Role, text string) Part { return Part{Role: role, Ref: RefText, Text: text} }

// FillerPart stands in for message i with the first words words of its filler.
func FillerPart(i, words int) Part { return Part{Ref: i, Fill: words} }

// role returns the role a part's message has.
func (p Part) role(c *conv.Conversation) conv.Role {
	switch {
	case p.Ref == RefSystem:
		return conv.System
	case p.Ref == RefText:
		return p.Role
	default:
		return c.Messages[p.Ref].Role
	}
}

// content returns a part's own text (before joining).
func (p Part) content(c *conv.Conversation) string {
	switch {
	case p.Ref == RefSystem:
		return c.System
	case p.Ref == RefText:
		return p.Text
	case p.Fill > 0:
		return FillerText(c.ID, p.Ref, p.Fill)
	default:
		return c.Messages[p.Ref].Content
	}
}

// Validate reports the first reason parts cannot be materialized against c,
// or nil. Contexts built by the curate stage's strategies always validate;
// use it on contexts read back from storage before trusting them.
func Validate(c *conv.Conversation, parts []Part) error {
	for k, p := range parts {
		switch {
		case p.Ref == RefSystem:
			if c.System == "" {
				return fmt.Errorf("checking part %d: conversation %q has no system message", k, c.ID)
			}
		case p.Ref == RefText:
			if _, ok := conv.ParseRole(string(p.Role)); !ok {
				return fmt.Errorf("checking part %d: literal part has role %q", k, p.Role)
			}
		case p.Ref < 0 || p.Ref >= len(c.Messages):
			return fmt.Errorf("checking part %d: message %d out of range (conversation %q has %d)", k, p.Ref, c.ID, len(c.Messages))
		}
		if p.Ref != RefText && (p.Role != "" || p.Text != "") {
			return fmt.Errorf("checking part %d: only literal parts carry a role or text", k)
		}
		if p.Fill < 0 || (p.Fill > 0 && p.Ref < 0) {
			return fmt.Errorf("checking part %d: fill %d needs a message reference", k, p.Fill)
		}
		if p.Join {
			if k == 0 {
				return fmt.Errorf("checking part %d: the first part cannot join a previous one", k)
			}
			if r, prev := p.role(c), parts[k-1].role(c); r != prev {
				return fmt.Errorf("checking part %d: %s part cannot join a %s message", k, r, prev)
			}
		}
	}
	return nil
}

// Materialize returns the chat messages parts stand for. It panics on parts
// that do not Validate against c, as indexing out of range would: contexts
// from the curate stage's strategies always fit the conversation they came
// from.
func Materialize(c *conv.Conversation, parts []Part) []conv.Message {
	out := make([]conv.Message, 0, len(parts))
	ForEachMessage(c, parts, func(role conv.Role, group []Part) {
		out = append(out, conv.Message{Role: role, Content: GroupContent(c, group)})
	})
	return out
}

// ForEachMessage calls fn once per materialized message with the parts that
// make it up (one part, or a part and the parts joined to it).
func ForEachMessage(c *conv.Conversation, parts []Part, fn func(role conv.Role, group []Part)) {
	for i := 0; i < len(parts); {
		j := i + 1
		for j < len(parts) && parts[j].Join {
			j++
		}
		fn(parts[i].role(c), parts[i:j])
		i = j
	}
}

// GroupContent is the content of the message a group of parts (as
// ForEachMessage passes them) materializes into: the parts' texts joined by
// JoinSeparator.
func GroupContent(c *conv.Conversation, group []Part) string {
	if len(group) == 1 {
		return group[0].content(c)
	}
	var b strings.Builder
	for k, p := range group {
		if k > 0 {
			b.WriteString(JoinSeparator)
		}
		b.WriteString(p.content(c))
	}
	return b.String()
}

// MessageCount is how many messages parts materialize into.
func MessageCount(parts []Part) int {
	n := 0
	for _, p := range parts {
		if !p.Join {
			n++
		}
	}
	return n
}
