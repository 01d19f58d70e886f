package parquetio

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

// canonicalDecoder reads rows of the conversation/v1 schema. Only id and
// messages are required, so files written by other tools with a subset of
// the columns also load.
//
// The file is ours, so the decoder is faithful rather than strict: a
// conversation with no user message, or no messages at all, comes back as
// it was written. It quarantines only rows that cannot become a valid
// conversation: a null messages list, a null message, an unknown role,
// text that is not UTF-8, or meta that is not JSON.
type canonicalDecoder struct {
	file string
	rec  arrow.Record

	id, srcFile, format, system, language, meta strCol
	line, row                                   intCol
	toxic, redacted                             *array.Boolean
	msgs                                        msgCols

	langSource, langDetector strCol
	langConfidence           *array.Float64
}

func (d *canonicalDecoder) bind(rec arrow.Record) error {
	d.rec = rec
	var err error
	bindStr := func(dst *strCol, name string) {
		if err == nil {
			*dst, err = optStr(rec, name)
		}
	}
	bindStr(&d.id, ColID)
	bindStr(&d.srcFile, ColSourceFile)
	bindStr(&d.format, ColFormat)
	bindStr(&d.system, ColSystem)
	bindStr(&d.language, ColLanguage)
	bindStr(&d.meta, ColMeta)
	bindStr(&d.langSource, ColLanguageSource)
	bindStr(&d.langDetector, ColLanguageDetector)
	if err != nil {
		return err
	}
	if d.id == nil {
		return fmt.Errorf("column %q is missing", ColID)
	}
	if d.line, err = optInt(rec, ColSourceLine); err != nil {
		return err
	}
	if d.row, err = optInt(rec, ColSourceRow); err != nil {
		return err
	}
	if d.toxic, err = optBool(rec, ColToxic); err != nil {
		return err
	}
	if d.redacted, err = optBool(rec, ColRedacted); err != nil {
		return err
	}
	if a := column(rec, ColLanguageConfidence); a != nil {
		var ok bool
		if d.langConfidence, ok = a.(*array.Float64); !ok {
			return fmt.Errorf("column %q has type %s, want double", ColLanguageConfidence, a.DataType())
		}
	} else {
		d.langConfidence = nil
	}
	msgs := column(rec, ColMessages)
	if msgs == nil {
		return fmt.Errorf("column %q is missing", ColMessages)
	}
	d.msgs, err = bindMessages(msgs, ColMessages)
	return err
}

func (d *canonicalDecoder) decode(i int, row int64) record.Record {
	c, p := d.conversation(i, row)
	return rowRecord(c, p, d.file, d.rec, i, row)
}

func (d *canonicalDecoder) conversation(i int, row int64) (*conv.Conversation, *problem) {
	c := &conv.Conversation{
		ID:       getStr(d.id, i),
		Format:   getStr(d.format, i),
		System:   getStr(d.system, i),
		Language: getStr(d.language, i),
		Toxic:    getBool(d.toxic, i),
		Redacted: getBool(d.redacted, i),

		LanguageSource:   getStr(d.langSource, i),
		LanguageDetector: getStr(d.langDetector, i),
	}
	if d.langConfidence != nil && !d.langConfidence.IsNull(i) {
		f := d.langConfidence.Value(i)
		if !(f >= 0 && f <= 1) {
			return nil, badf(record.BadField, "%s %v is not in [0, 1]", ColLanguageConfidence, f)
		}
		c.LanguageConfidence = f
	}
	if d.srcFile != nil {
		c.Source = conv.Source{File: getStr(d.srcFile, i), Line: getInt(d.line, i), Row: getInt(d.row, i)}
	} else {
		// Without a recorded origin, this file is the origin.
		c.Source = conv.Source{File: d.file, Row: row}
	}
	if p := checkUTF8(ColID, c.ID, ColSourceFile, c.Source.File, ColFormat, c.Format,
		ColSystem, c.System, ColLanguage, c.Language,
		ColLanguageSource, c.LanguageSource, ColLanguageDetector, c.LanguageDetector); p != nil {
		return nil, p
	}
	if d.meta != nil && !d.meta.IsNull(i) {
		meta := []byte(d.meta.Value(i)) // a copy, as getStr makes
		if !utf8.Valid(meta) {
			return nil, badf(record.InvalidUTF8, "%s is not valid UTF-8", ColMeta)
		}
		if !json.Valid(meta) {
			return nil, badf(record.BadField, "%s is not valid JSON", ColMeta)
		}
		c.Meta = meta
	}
	var p *problem
	c.Messages, _, p = d.msgs.messages(i, false)
	if p != nil {
		return nil, p
	}
	return c, nil
}
