package jsonl

import (
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

// Every chat format keeps its turns in one array of objects. The walk, its
// checks and the wording of its problems live here so that the formats
// quarantine the same mistakes the same way; a format says only what its
// members are called and how its speaker names map onto roles.

// ObjectArray reads the value of a record's member field, which should be an
// array of objects, and calls fn for each element with its index; fn must
// read the object. It reports false for null, which counts as absent. A
// string is noted as MessagesString says; any other type, or an element that
// is not an object (item names one in the detail), notes BadField and is
// skipped, so the walk still reaches a syntax error further on.
func ObjectArray(c *Cursor, field, item string, prob **Problem, fn func(i int) error) (bool, error) {
	switch k := c.Kind(); k {
	case KindNull:
		return false, c.Null()
	case KindString:
		s, err := c.Str()
		if err == nil {
			reason, detail := MessagesString(field, s)
			Note(prob, reason, "%s", detail)
		}
		return true, err
	case KindArray:
	default:
		Note(prob, record.BadField, "%s is a %s, not an array", field, k)
		return true, c.Skip()
	}
	return true, c.Array(func(i int) error {
		if k := c.Kind(); k != KindObject {
			Note(prob, record.BadField, "%s %d is a %s, not an object", item, i, k)
			return c.Skip()
		}
		return fn(i)
	})
}

// Messages is how one chat format spells its messages array. Read walks it.
type Messages struct {
	Field string // the record's member holding the array, e.g. "messages"
	Item  string // what a problem calls one element, e.g. "message" or "turn"
	// Speaker lists the members that name who speaks; a problem about a
	// message without one names the first.
	Speaker []string
	Text    []string // the members holding what was said
	// Role maps a speaker name onto a role, or reports that it cannot.
	Role func(name string) (conv.Role, bool)
	// UnknownRole is the detail for a name Role refuses: a format taking the
	// element's index and the (clipped) name. Empty means
	// "<Item> %d has unknown role %q".
	UnknownRole string
	// Parts lets a Text member also be a list of typed parts (TextParts);
	// otherwise it must be a string, or null for "". (A flag rather than a
	// function: calling a function value would move every decoder's Cursor
	// to the heap.)
	Parts bool
}

// Read reads the messages array into d.Messages; a system message that
// comes first goes to d.System instead, as conv.Conversation wants. It
// reports false when the member is null. A message without a speaker, or
// with one Role does not know, is noted (BadField, UnknownRole) and left
// out.
func (f *Messages) Read(c *Cursor, d *conv.Conversation, prob **Problem) (bool, error) {
	// Reset even when the value turns out not to be an array: then a
	// problem is noted and the record is quarantined, so nothing reads d.
	d.Messages, d.System = d.Messages[:0], ""
	return ObjectArray(c, f.Field, f.Item, prob, func(i int) error {
		var (
			m       conv.Message
			name    string
			hasName bool
		)
		err := c.Object(func(key []byte, _ int) error {
			switch {
			case member(f.Speaker, key):
				if k := c.Kind(); k != KindString {
					Note(prob, record.BadField, "%s %d %s is a %s, not a string", f.Item, i, key, k)
					return c.Skip()
				}
				b, err := c.StrBytes()
				name, hasName = internRole(b), true
				return err
			case member(f.Text, key):
				s, err := f.content(c, i, key, prob)
				m.Content = s
				return err
			}
			return c.Skip()
		})
		if err != nil {
			return err
		}
		if !hasName {
			Note(prob, record.BadField, "%s %d has no %s", f.Item, i, f.Speaker[0])
			return nil
		}
		r, ok := f.Role(name)
		if !ok {
			format := f.UnknownRole
			if format == "" {
				format = f.Item + " %d has unknown role %q"
			}
			Note(prob, record.UnknownRole, format, i, Clip(name))
			return nil
		}
		m.Role = r
		if r == conv.System && len(d.Messages) == 0 && d.System == "" {
			d.System = m.Content
			return nil
		}
		d.Messages = append(d.Messages, m)
		return nil
	})
}

// content reads one Text member.
func (f *Messages) content(c *Cursor, i int, key []byte, prob **Problem) (string, error) {
	if f.Parts {
		return TextParts(c, f.Item, i, prob)
	}
	if k := c.Kind(); k != KindString && k != KindNull {
		Note(prob, record.BadField, "%s %d %s is a %s, not a string", f.Item, i, key, k)
		return "", c.Skip()
	}
	return OptString(c, f.Field, prob) // a string or null: nothing to note
}

// TextParts reads a message's content as OpenAI's API writes it: a string,
// null (as ""), or a list of parts whose "text" strings are joined with
// newlines; parts without text (images, audio) are left out. Element i of
// what item calls one is named in problems.
func TextParts(c *Cursor, item string, i int, prob **Problem) (string, error) {
	switch k := c.Kind(); k {
	case KindString:
		return c.Str()
	case KindNull:
		return "", c.Null()
	case KindArray:
	default:
		Note(prob, record.BadField, "%s %d content is a %s", item, i, k)
		return "", c.Skip()
	}
	var sb strings.Builder
	join := func() error {
		s, err := c.Str()
		if sb.Len() > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(s)
		return err
	}
	err := c.Array(func(j int) error {
		switch k := c.Kind(); k {
		case KindString:
			// A bare string part: some exporters write these.
			return join()
		case KindObject:
		default:
			Note(prob, record.BadField, "%s %d content part %d is a %s", item, i, j, k)
			return c.Skip()
		}
		return c.Object(func(key []byte, _ int) error {
			if string(key) != "text" {
				return c.Skip()
			}
			if k := c.Kind(); k != KindString {
				// {"type":"text","text":{"value":...}} and the like.
				Note(prob, record.BadField, "%s %d content part %d text is a %s", item, i, j, k)
				return c.Skip()
			}
			return join()
		})
	})
	return sb.String(), err
}

// member reports whether key is one of names, without allocating.
func member(names []string, key []byte) bool {
	for _, n := range names {
		if string(key) == n {
			return true
		}
	}
	return false
}

// internRole avoids allocating a string for the two speaker names nearly
// every message has.
func internRole(b []byte) string {
	switch string(b) {
	case "user":
		return "user"
	case "assistant":
		return "assistant"
	}
	return string(b)
}
