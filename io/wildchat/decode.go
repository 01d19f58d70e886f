package wildchat

import (
	"io"

	"github.com/ac3/ac3/io/jsonl"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

// Format is the value of Conversation.Format for WildChat records.
const Format = "wildchat"

// NewReader returns a reader of the WildChat records in r (JSON Lines, or a
// single JSON array of records); name is the file name put in each record's
// Source. Closing it does not close r.
func NewReader(r io.Reader, name string, opts ...jsonl.Option) record.Reader {
	return jsonl.NewRecordReader(r, name, Decode, opts...)
}

var _ jsonl.DecodeFunc = Decode

// Decode maps one WildChat record to a conversation, or quarantines it. It
// keeps no reference to raw and is safe for concurrent use.
//
// Quarantine reasons: InvalidUTF8, MalformedJSON, TruncatedLine, BadField (a
// field of the wrong type, a message without a role), MissingConversation
// (conversation absent or null), PythonReprString, UnknownRole and
// NoUserMessage.
func Decode(raw []byte, src conv.Source) record.Record {
	if bad, ok := jsonl.CheckUTF8(raw, src); !ok {
		return bad
	}
	var (
		c       jsonl.Cursor
		d       = conv.Conversation{Source: src, Format: Format}
		prob    *jsonl.Problem
		meta    jsonl.Members
		hash    string
		oldID   string
		hasConv bool
	)
	c.Reset(raw)
	if c.Kind() != jsonl.KindObject {
		return jsonl.NotObject(raw, src, &c)
	}
	err := c.Object(func(key []byte, start int) error {
		var err error
		switch string(key) {
		case "conversation":
			hasConv, err = messages(&c, &d, &prob)
			return err // not kept in Meta
		case "conversation_hash":
			hash, err = jsonl.ID(&c, "conversation_hash", &prob)
		case "conversation_id":
			oldID, err = jsonl.ID(&c, "conversation_id", &prob)
		case "language":
			d.Language, err = jsonl.OptString(&c, "language", &prob)
		case "toxic":
			d.Toxic, err = jsonl.OptBool(&c, "toxic", &prob)
		case "redacted":
			d.Redacted, err = jsonl.OptBool(&c, "redacted", &prob)
		default:
			err = c.Skip()
		}
		if err == nil {
			meta.Add(start, c.Offset())
		}
		return err
	})
	if err == nil {
		err = c.End()
	}
	if err != nil {
		return jsonl.SyntaxBad(raw, src, err)
	}
	if prob != nil {
		return jsonl.Quarantine(raw, src, prob.Reason, prob.Detail)
	}
	if !hasConv {
		return jsonl.Quarantine(raw, src, record.MissingConversation, "no conversation field (or it is null)")
	}
	if d.UserTurns() == 0 {
		return jsonl.Quarantine(raw, src, record.NoUserMessage, "conversation has no user message")
	}
	switch {
	case hash != "":
		d.ID = hash
	case oldID != "":
		d.ID = oldID
	default:
		d.ID = jsonl.ContentID(&d)
	}
	d.Meta = meta.Object(raw)
	return record.Record{Conv: &d}
}

// messages reads the conversation field into d. It reports false when the
// field is null.
func messages(c *jsonl.Cursor, d *conv.Conversation, prob **jsonl.Problem) (bool, error) {
	switch k := c.Kind(); k {
	case jsonl.KindNull:
		d.Messages = nil
		return false, c.Null()
	case jsonl.KindString:
		s, err := c.Str()
		if err == nil {
			reason, detail := jsonl.MessagesString("conversation", s)
			jsonl.Note(prob, reason, "%s", detail)
		}
		return true, err
	case jsonl.KindArray:
	default:
		jsonl.Note(prob, record.BadField, "conversation is a %s, not an array", k)
		return true, c.Skip()
	}
	d.Messages = d.Messages[:0]
	d.System = ""
	err := c.Array(func(i int) error {
		if k := c.Kind(); k != jsonl.KindObject {
			jsonl.Note(prob, record.BadField, "message %d is a %s, not an object", i, k)
			return c.Skip()
		}
		var (
			m       conv.Message
			role    string
			hasRole bool
		)
		err := c.Object(func(key []byte, _ int) error {
			switch string(key) {
			case "role":
				if k := c.Kind(); k != jsonl.KindString {
					jsonl.Note(prob, record.BadField, "message %d role is a %s, not a string", i, k)
					return c.Skip()
				}
				b, err := c.StrBytes()
				role, hasRole = internRole(b), true
				return err
			case "content":
				switch k := c.Kind(); k {
				case jsonl.KindString:
					s, err := c.Str()
					m.Content = s
					return err
				case jsonl.KindNull:
					m.Content = ""
					return c.Null()
				default:
					jsonl.Note(prob, record.BadField, "message %d content is a %s, not a string", i, k)
					return c.Skip()
				}
			}
			return c.Skip()
		})
		if err != nil {
			return err
		}
		if !hasRole {
			jsonl.Note(prob, record.BadField, "message %d has no role", i)
			return nil
		}
		r, ok := conv.ParseRole(role)
		if !ok {
			jsonl.Note(prob, record.UnknownRole, "message %d has unknown role %q", i, jsonl.Clip(role))
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
	return true, err
}

// internRole avoids allocating a string for the two roles nearly every
// message has.
func internRole(b []byte) string {
	switch string(b) {
	case "user":
		return "user"
	case "assistant":
		return "assistant"
	}
	return string(b)
}
