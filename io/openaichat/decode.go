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
			hasMsgs, err = messages(&c, &d, &prob)
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
	if err == nil {
		err = c.End()
	}
	if err != nil {
		return jsonl.SyntaxBad(raw, src, err)
	}
	if prob != nil {
		return jsonl.Quarantine(raw, src, prob.Reason, prob.Detail)
	}
	if !hasMsgs {
		return jsonl.Quarantine(raw, src, record.MissingConversation, "no messages field (or it is null)")
	}
	if d.UserTurns() == 0 {
		return jsonl.Quarantine(raw, src, record.NoUserMessage, "messages have no user message")
	}
	if system != "" {
		if d.System != "" {
			// Both a system field and a leading system message: keep
			// the message where it was rather than drop either.
			d.Messages = append([]conv.Message{{Role: conv.System, Content: d.System}}, d.Messages...)
		}
		d.System = system
	}
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

// roles maps the role names of the OpenAI API family onto ours.
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

func messages(c *jsonl.Cursor, d *conv.Conversation, prob **jsonl.Problem) (bool, error) {
	switch k := c.Kind(); k {
	case jsonl.KindNull:
		d.Messages, d.System = nil, ""
		return false, c.Null()
	case jsonl.KindString:
		s, err := c.Str()
		if err == nil {
			reason, detail := jsonl.MessagesString("messages", s)
			jsonl.Note(prob, reason, "%s", detail)
		}
		return true, err
	case jsonl.KindArray:
	default:
		jsonl.Note(prob, record.BadField, "messages is a %s, not an array", k)
		return true, c.Skip()
	}
	d.Messages, d.System = d.Messages[:0], ""
	err := c.Array(func(i int) error {
		if k := c.Kind(); k != jsonl.KindObject {
			jsonl.Note(prob, record.BadField, "message %d is a %s, not an object", i, k)
			return c.Skip()
		}
		var (
			m       conv.Message
			name    string
			hasRole bool
		)
		err := c.Object(func(key []byte, _ int) error {
			switch string(key) {
			case "role":
				if k := c.Kind(); k != jsonl.KindString {
					jsonl.Note(prob, record.BadField, "message %d role is a %s, not a string", i, k)
					return c.Skip()
				}
				var err error
				name, err = c.Str()
				hasRole = true
				return err
			case "content":
				s, err := Content(c, i, prob)
				m.Content = s
				return err
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
		r, ok := role(name)
		if !ok {
			jsonl.Note(prob, record.UnknownRole, "message %d has unknown role %q", i, jsonl.Clip(name))
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

// Content reads a message's content: a string, null (as ""), or a list of
// parts whose "text" strings are joined with newlines; parts without text
// (images, audio) are left out. Message i is named in problems.
func Content(c *jsonl.Cursor, i int, prob **jsonl.Problem) (string, error) {
	switch k := c.Kind(); k {
	case jsonl.KindString:
		return c.Str()
	case jsonl.KindNull:
		return "", c.Null()
	case jsonl.KindArray:
	default:
		jsonl.Note(prob, record.BadField, "message %d content is a %s", i, k)
		return "", c.Skip()
	}
	var sb strings.Builder
	err := c.Array(func(j int) error {
		switch k := c.Kind(); k {
		case jsonl.KindString:
			// A bare string part: some exporters write these.
			s, err := c.Str()
			if sb.Len() > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString(s)
			return err
		case jsonl.KindObject:
		default:
			jsonl.Note(prob, record.BadField, "message %d content part %d is a %s", i, j, k)
			return c.Skip()
		}
		return c.Object(func(key []byte, _ int) error {
			if string(key) != "text" {
				return c.Skip()
			}
			if k := c.Kind(); k != jsonl.KindString {
				// {"type":"text","text":{"value":...}} and the like.
				jsonl.Note(prob, record.BadField, "message %d content part %d text is a %s", i, j, k)
				return c.Skip()
			}
			s, err := c.Str()
			if sb.Len() > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString(s)
			return err
		})
	})
	return sb.String(), err
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
