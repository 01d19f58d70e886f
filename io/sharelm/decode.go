package sharelm

import (
	"io"
	"strings"

	"github.com/ac3/ac3/io/jsonl"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

// Format is the value of Conversation.Format for ShareLM records.
const Format = "sharelm"

// NewReader returns a reader of the ShareLM records in r (JSON Lines, or a
// JSON array of records); name goes into each record's Source. Closing it
// does not close r.
func NewReader(r io.Reader, name string, opts ...jsonl.Option) record.Reader {
	return jsonl.NewRecordReader(r, name, Decode, opts...)
}

var _ jsonl.DecodeFunc = Decode

// Role maps a ShareLM speaker onto a role. The sources it pools name the
// sides differently: user and human are the user; assistant, bot, model,
// gpt and chatbot the assistant; system the system. Case does not matter.
func Role(name string) (conv.Role, bool) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "user", "human":
		return conv.User, true
	case "assistant", "bot", "model", "gpt", "chatbot":
		return conv.Assistant, true
	case "system":
		return conv.System, true
	case "tool":
		return conv.Tool, true
	}
	return "", false
}

var messages = jsonl.Messages{
	Field:   "conversation",
	Item:    "message",
	Speaker: []string{"role"},
	Text:    []string{"content"},
	Role:    Role,
}

// Decode maps one ShareLM record to a conversation, or quarantines it. It
// keeps no reference to raw and is safe for concurrent use.
//
// Mapping: conversation_id (string or number; else a content hash) is the
// id; conversation the messages (a leading system message becomes
// Conversation.System); conversation_metadata's language, toxic and
// redacted the conversation's (the flags are strings there, "True" or
// "False"; a value that is neither is left unset). Every top-level member
// but the conversation is kept in Meta.
//
// Quarantine reasons: InvalidUTF8, MalformedJSON, TruncatedLine, BadField,
// MissingConversation, PythonReprString, UnknownRole and NoUserMessage.
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
			return err
		case "conversation_id":
			id, err = jsonl.ID(&c, "conversation_id", &prob)
		case "conversation_metadata":
			err = readMetadata(&c, &d)
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
	d.ID = id
	if d.ID == "" {
		d.ID = jsonl.ContentID(&d)
	}
	d.Meta = meta.Object(raw)
	return record.Record{Conv: &d}
}

// readMetadata reads the members of conversation_metadata ac3 knows. The
// object is optional and its values loosely typed across sources, so
// nothing in it quarantines a record but broken JSON.
func readMetadata(c *jsonl.Cursor, d *conv.Conversation) error {
	if c.Kind() != jsonl.KindObject {
		return c.Skip()
	}
	return c.Object(func(key []byte, _ int) error {
		switch string(key) {
		case "language":
			if c.Kind() == jsonl.KindString {
				s, err := c.Str()
				d.Language = strings.TrimSpace(s)
				return err
			}
		case "toxic", "redacted":
			v, ok, err := looseBool(c)
			if ok && string(key) == "toxic" {
				d.Toxic = v
			} else if ok {
				d.Redacted = v
			}
			return err
		}
		return c.Skip()
	})
}

// looseBool reads a JSON bool or a string spelling one ("True", "false",
// "1", "0"); ok is false for anything else.
func looseBool(c *jsonl.Cursor) (v, ok bool, err error) {
	switch c.Kind() {
	case jsonl.KindBool:
		v, err = c.Bool()
		return v, err == nil, err
	case jsonl.KindString:
		s, err := c.Str()
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true", "1", "yes":
			return true, true, err
		case "false", "0", "no":
			return false, true, err
		}
		return false, false, err
	}
	return false, false, c.Skip()
}
