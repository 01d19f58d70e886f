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

// turns is how ShareGPT spells its turns: "from" (or "role") and "value" (or
// "content").
var turns = jsonl.Messages{
	Field:       "conversations",
	Item:        "turn",
	Speaker:     []string{"from", "role"},
	Text:        []string{"value", "content"},
	Role:        Role,
	UnknownRole: "turn %d is from unknown speaker %q",
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
			hasConv, err = turns.Read(&c, &d, &prob)
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
	if bad, ok := jsonl.Finish(raw, src, &c, err, prob, turns.Field, hasConv); !ok {
		return bad
	}
	if d.UserTurns() == 0 {
		return jsonl.Quarantine(raw, src, record.NoUserMessage, "conversations have no human turn")
	}
	jsonl.SetSystem(&d, system)
	d.ID = id
	if d.ID == "" {
		d.ID = jsonl.ContentID(&d)
	}
	d.Meta = meta.Object(raw)
	return record.Record{Conv: &d}
}
