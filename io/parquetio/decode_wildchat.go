package parquetio

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

// Column names of WildChat as released on Hugging Face. WildChat-1M and the
// 4.8M release name the id conversation_hash; the first release used
// conversation_id.
const (
	wcHash         = "conversation_hash"
	wcID           = "conversation_id"
	wcConversation = "conversation"
	wcLanguage     = "language"
	wcToxic        = "toxic"
	wcRedacted     = "redacted"
)

// wildchatDecoder maps WildChat rows to conversations the way the JSONL
// WildChat reader does: the id from conversation_hash (or conversation_id),
// Language, Toxic and Redacted lifted from the top-level columns, and Meta a
// JSON object of every top-level column except the id and the conversation
// (model, timestamp, turn, language, moderation, toxic, redacted, state,
// country, hashed_ip, header, ...), in file order. The per-message extras
// (turn_identifier, per-message country and so on) are dropped, as conv has
// no place for them.
type wildchatDecoder struct {
	file string
	rec  arrow.Record

	idName    string
	id        arrow.Array
	msgs      msgCols
	language  strCol
	toxic     *array.Boolean
	redacted  *array.Boolean
	metaCols  []int
	metaNames []string

	buf []byte // reused for Meta
}

func (d *wildchatDecoder) bind(rec arrow.Record) error {
	d.rec = rec
	d.idName = wcHash
	if d.id = column(rec, wcHash); d.id == nil {
		d.idName = wcID
		if d.id = column(rec, wcID); d.id == nil {
			return fmt.Errorf("column %q is missing", wcHash)
		}
	}
	if _, isStr := asStrCol(d.id); !isStr {
		if _, isInt := asIntCol(d.id); !isInt {
			return fmt.Errorf("column %q has type %s, want text or an integer", d.idName, d.id.DataType())
		}
	}
	a := column(rec, wcConversation)
	if a == nil {
		return fmt.Errorf("column %q is missing", wcConversation)
	}
	var err error
	if d.msgs, err = bindMessages(a, wcConversation); err != nil {
		return err
	}
	// The lifted fields are optional and, if oddly typed, simply not
	// lifted: they still reach Meta as they are.
	d.language, _ = optStr(rec, wcLanguage)
	d.toxic, _ = optBool(rec, wcToxic)
	d.redacted, _ = optBool(rec, wcRedacted)

	d.metaCols, d.metaNames = d.metaCols[:0], d.metaNames[:0]
	for c, f := range rec.Schema().Fields() {
		if f.Name == wcConversation || f.Name == d.idName {
			continue
		}
		d.metaCols = append(d.metaCols, c)
		d.metaNames = append(d.metaNames, f.Name)
	}
	return nil
}

func (d *wildchatDecoder) decode(i int, row int64) record.Record {
	c, p := d.conversation(i, row)
	return rowRecord(c, p, d.file, d.rec, i, row)
}

func (d *wildchatDecoder) conversation(i int, row int64) (*conv.Conversation, *problem) {
	if d.id.IsNull(i) {
		return nil, badf(record.BadField, "%s is null", d.idName)
	}
	var id string
	if s, ok := asStrCol(d.id); ok {
		id = getStr(s, i)
	} else {
		n, _ := asIntCol(d.id)
		id = strconv.FormatInt(n.int64At(i), 10)
	}
	c := &conv.Conversation{
		ID:       id,
		Source:   conv.Source{File: d.file, Row: row},
		Format:   FormatWildChat,
		Language: getStr(d.language, i),
		Toxic:    getBool(d.toxic, i),
		Redacted: getBool(d.redacted, i),
	}
	if p := checkUTF8(d.idName, c.ID, wcLanguage, c.Language); p != nil {
		return nil, p
	}
	var p *problem
	if c.Messages, c.System, p = d.msgs.messages(i, true); p != nil {
		return nil, p
	}
	if c.UserTurns() == 0 {
		return nil, badf(record.NoUserMessage, "no message has role user")
	}
	c.Meta = d.meta(i)
	return c, nil
}

// meta renders the row's other columns as a JSON object.
func (d *wildchatDecoder) meta(i int) json.RawMessage {
	b := append(d.buf[:0], '{')
	for k, c := range d.metaCols {
		if k > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, d.metaNames[k])
		b = append(b, ':')
		b = appendJSONValue(b, d.rec.Column(c), i)
	}
	b = append(b, '}')
	d.buf = b
	return append(json.RawMessage(nil), b...)
}
