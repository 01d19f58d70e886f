package sharegpt

import (
	"io"
	"strings"

	"github.com/ac3/ac3/io/jsonl"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

// Format is the value of Conversation.Format for ShareGPT records.
const Format = "sharegpt"

// NewReader returns a reader of the ShareGPT records in r, JSON Lines or a
// JSON array; name goes into each record's Source. Closing it does not close
// r.
func NewReader(r io.Reader, name string, opts ...jsonl.Option) record.Reader {
	return jsonl.NewRecordReader(r, name, Decode, opts...)
}

var _ jsonl.DecodeFunc = Decode

// Role maps a ShareGPT speaker name onto a role: human and user are the
// user; gpt, assistant, chatgpt, bard and model the assistant; system the
// system; tool, function and observation a tool. Case does not matter.
func Role(from string) (conv.Role, bool) {
	switch strings.ToLower(from) {
	case "human", "user":
		return conv.User, true
	case "gpt", "assistant", "chatgpt", "bard", "model":
		return conv.Assistant, true
	case "system":
		return conv.System, true
	case "tool", "function", "observation", "function_call":
		return conv.Tool, true
	}
	return "", false
}

// Decode maps one ShareGPT record to a conversation, or quarantines it. It
// is safe for concurrent use and keeps no reference to raw.
//
// Mapping: id (string or number; else a content hash); conversations, where
// each turn's speaker is "from" (or "role") and its text "value" (or
// "content"); a leading system turn, or a top-level "system" string, becomes
// Conversation.System. Every other top-level field is kept in Meta.
//
// Quarantine reasons: InvalidUTF8, MalformedJSON, TruncatedLine, BadField,
// MissingConversation, PythonReprString, UnknownRole, NoUserMessage.
func Decode(raw []byte, src conv.Source) record.Record {
	if bad, ok := jsonl.CheckUTF8(raw, src); !ok {
		return bad
	}
	var (
		c       jsonl.Cursor
		d       = conv.Conversation{Source: src, Format: Format}
		prob    *jsonl.Problem
		meta    jsonl.Members
		id      string
		system  string
		hasConv bool
	)
	c.Reset(raw)
	if c.Kind() != jsonl.KindObject {
		return jsonl.NotObject(raw, src, &c)
	}
	err := c.Object(func(key []byte, start int) error {
		var err error
		switch string(key) {
		case "conversations":
			hasConv, err = turns(&c, &d, &prob)
			return err
		case "id":
			id, err = jsonl.ID(&c, "id", &prob)
		case "system":
			system, err = jsonl.OptString(&c, "system", &prob)
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
		return jsonl.Quarantine(raw, src, record.MissingConversation, "no conversations field (or it is null)")
	}
	if d.UserTurns() == 0 {
		return jsonl.Quarantine(raw, src, record.NoUserMessage, "conversations have no human turn")
	}
	if system != "" {
		if d.System != "" {
			d.Messages = append([]conv.Message{{Role: conv.System, Content: d.System}}, d.Messages...)
		}
		d.System = system
	}
	d.ID = id
	if d.ID == "" {
		d.ID = jsonl.ContentID(&d)
	}
	d.Meta = meta.Object(raw)
	return record.Record{Conv: &d}
}

func turns(c *jsonl.Cursor, d *conv.Conversation, prob **jsonl.Problem) (bool, error) {
	switch k := c.Kind(); k {
	case jsonl.KindNull:
		d.Messages, d.System = nil, ""
		return false, c.Null()
	case jsonl.KindString:
		s, err := c.Str()
		if err == nil {
			reason, detail := jsonl.MessagesString("conversations", s)
			jsonl.Note(prob, reason, "%s", detail)
		}
		return true, err
	case jsonl.KindArray:
	default:
		jsonl.Note(prob, record.BadField, "conversations is a %s, not an array", k)
		return true, c.Skip()
	}
	d.Messages, d.System = d.Messages[:0], ""
	err := c.Array(func(i int) error {
		if k := c.Kind(); k != jsonl.KindObject {
			jsonl.Note(prob, record.BadField, "turn %d is a %s, not an object", i, k)
			return c.Skip()
		}
		var (
			m       conv.Message
			from    string
			hasFrom bool
		)
		err := c.Object(func(key []byte, _ int) error {
			switch string(key) {
			case "from", "role":
				if k := c.Kind(); k != jsonl.KindString {
					jsonl.Note(prob, record.BadField, "turn %d %s is a %s, not a string", i, key, k)
					return c.Skip()
				}
				var err error
				from, err = c.Str()
				hasFrom = true
				return err
			case "value", "content":
				switch k := c.Kind(); k {
				case jsonl.KindString:
					s, err := c.Str()
					m.Content = s
					return err
				case jsonl.KindNull:
					m.Content = ""
					return c.Null()
				default:
					jsonl.Note(prob, record.BadField, "turn %d %s is a %s, not a string", i, key, k)
					return c.Skip()
				}
			}
			return c.Skip()
		})
		if err != nil {
			return err
		}
		if !hasFrom {
			jsonl.Note(prob, record.BadField, "turn %d has no from", i)
			return nil
		}
		r, ok := Role(from)
		if !ok {
			jsonl.Note(prob, record.UnknownRole, "turn %d is from unknown speaker %q", i, jsonl.Clip(from))
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
