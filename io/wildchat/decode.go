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

// messages is how WildChat spells its turns; its role names are ours.
var messages = jsonl.Messages{
	Field:   "conversation",
	Item:    "message",
	Speaker: []string{"role"},
	Text:    []string{"content"},
	Role:    conv.ParseRole,
}

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
			hasConv, err = messages.Read(&c, &d, &prob)
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
	if bad, ok := jsonl.Finish(raw, src, &c, err, prob, messages.Field, hasConv); !ok {
		return bad
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
