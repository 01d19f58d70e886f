package openaichat

import (
	"io"
	"strconv"
	"strings"

	"github.com/ac3/ac3/io/jsonl"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

// Format is the value of Conversation.Format for records that do not carry
// their own (canonical records keep theirs).
const Format = "openai"

// NewReader returns a reader of the OpenAI-chat or canonical records in r
// (JSON Lines, or one JSON array of records); name goes into each record's
// Source. Closing it does not close r.
func NewReader(r io.Reader, name string, opts ...jsonl.Option) record.Reader {
	return jsonl.NewRecordReader(r, name, Decode, opts...)
}

var _ jsonl.DecodeFunc = Decode

// Decode maps one record to a conversation, or quarantines it. It is safe
// for concurrent use and keeps no reference to raw.
//
// Mapping: id (string or number; else a content hash); messages, where a
// leading system (or developer) message becomes Conversation.System and
// list-of-parts content is joined text parts; from canonical records also
// format, system, language (with language_source, language_detector and
// language_confidence), toxic, redacted and meta. When meta is present
// it becomes Meta; otherwise the fields not listed here do. A canonical
// record's source field is dropped: Source says where this copy was read.
//
// Quarantine reasons: InvalidUTF8, MalformedJSON, TruncatedLine, BadField,
// MissingConversation, PythonReprString, UnknownRole, NoUserMessage.
func Decode(raw []byte, src conv.Source) record.Record {
	if bad, ok := jsonl.CheckUTF8(raw, src); !ok {
		return bad
	}
	var (
		c        jsonl.Cursor
		d        = conv.Conversation{Source: src}
		prob     *jsonl.Problem
		extra    jsonl.Members
		id       string
		system   string
		meta     []byte
		hasMsgs  bool
		hasMeta  bool
		sawField bool
	)
	c.Reset(raw)
	if c.Kind() != jsonl.KindObject {
		return jsonl.NotObject(raw, src, &c)
	}
	err := c.Object(func(key []byte, start int) error {
		var err error
		switch string(key) {
		case "messages":
			hasMsgs, err = messages.Read(&c, &d, &prob)
			return err
		case "id":
			id, err = jsonl.ID(&c, "id", &prob)
			return err
		case "format":
			d.Format, err = jsonl.OptString(&c, "format", &prob)
			return err
		case "system":
			system, err = jsonl.OptString(&c, "system", &prob)
			return err
		case "source":
			return c.Skip()
		case "language":
			d.Language, err = jsonl.OptString(&c, "language", &prob)
			return err
		case "language_source":
			d.LanguageSource, err = jsonl.OptString(&c, "language_source", &prob)
			return err
		case "language_detector":
			d.LanguageDetector, err = jsonl.OptString(&c, "language_detector", &prob)
			return err
		case "language_confidence":
			d.LanguageConfidence, err = confidence(&c, &prob)
			return err
		case "toxic":
			d.Toxic, err = jsonl.OptBool(&c, "toxic", &prob)
			return err
		case "redacted":
			d.Redacted, err = jsonl.OptBool(&c, "redacted", &prob)
			return err
		case "meta":
			switch k := c.Kind(); k {
			case jsonl.KindNull:
				meta, hasMeta = nil, false
				return c.Null()
			case jsonl.KindObject:
				meta, err = c.Raw()
				hasMeta = true
				return err
			default:
				jsonl.Note(&prob, record.BadField, "meta is a %s, not an object", k)
				return c.Skip()
			}
		}
		sawField = true
		if err = c.Skip(); err == nil {
			extra.Add(start, c.Offset())
		}
		return err
	})
	if bad, ok := jsonl.Finish(raw, src, &c, err, prob, messages.Field, hasMsgs); !ok {
		return bad
	}
	if d.UserTurns() == 0 {
		return jsonl.Quarantine(raw, src, record.NoUserMessage, "messages have no user message")
	}
	jsonl.SetSystem(&d, system)
	if d.Format == "" {
		d.Format = Format
	}
	switch {
	case hasMeta:
		d.Meta = append([]byte(nil), meta...)
	case sawField:
		d.Meta = extra.Object(raw)
	}
	d.ID = id
	if d.ID == "" {
		d.ID = jsonl.ContentID(&d)
	}
	return record.Record{Conv: &d}
}

// messages is how the OpenAI chat shape spells its turns.
var messages = jsonl.Messages{
	Field:   "messages",
	Item:    "message",
	Speaker: []string{"role"},
	Text:    []string{"content"},
	Role:    role,
	Parts:   true,
}

// role maps the role names of the OpenAI API family onto ours.
func role(s string) (conv.Role, bool) {
	if r, ok := conv.ParseRole(s); ok {
		return r, true
	}
	switch strings.ToLower(s) {
	case "system", "developer":
		return conv.System, true
	case "user", "human":
		return conv.User, true
	case "assistant":
		return conv.Assistant, true
	case "tool", "function":
		return conv.Tool, true
	}
	return "", false
}

// Content reads a message's content: a string, null (as ""), or a list of
// parts whose "text" strings are joined with newlines; parts without text
// (images, audio) are left out. Message i is named in problems.
func Content(c *jsonl.Cursor, i int, prob **jsonl.Problem) (string, error) {
	return jsonl.TextParts(c, "message", i, prob)
}

// confidence reads language_confidence: a number in [0, 1] or null (as 0);
// anything else notes BadField.
func confidence(c *jsonl.Cursor, prob **jsonl.Problem) (float64, error) {
	switch k := c.Kind(); k {
	case jsonl.KindNull:
		return 0, c.Null()
	case jsonl.KindNumber:
		raw, err := c.Raw()
		if err != nil {
			return 0, err
		}
		f, perr := strconv.ParseFloat(string(raw), 64)
		if perr != nil || !(f >= 0 && f <= 1) {
			jsonl.Note(prob, record.BadField, "language_confidence %s is not a number in [0, 1]", jsonl.Clip(string(raw)))
			return 0, nil
		}
		return f, nil
	default:
		jsonl.Note(prob, record.BadField, "language_confidence is a %s, not a number", k)
		return 0, c.Skip()
	}
}
