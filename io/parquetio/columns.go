package parquetio

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

// Typed views of the columns decoders read. Files written by other tools
// may use large_string, string_view or binary where we use utf8, or int32
// where we use int64, so each view accepts the whole family.

// strCol is a column of text.
type strCol interface {
	IsNull(i int) bool
	Value(i int) string
}

type binaryCol struct{ *array.Binary }

func (c binaryCol) Value(i int) string { return c.ValueString(i) }

type largeBinaryCol struct{ *array.LargeBinary }

func (c largeBinaryCol) Value(i int) string { return c.ValueString(i) }

func asStrCol(a arrow.Array) (strCol, bool) {
	switch a := a.(type) {
	case *array.String:
		return a, true
	case *array.LargeString:
		return a, true
	case *array.StringView:
		return a, true
	case *array.Binary:
		return binaryCol{a}, true
	case *array.LargeBinary:
		return largeBinaryCol{a}, true
	}
	return nil, false
}

// intCol is a column of integers.
type intCol interface {
	IsNull(i int) bool
	int64At(i int) int64
}

type int64Col struct{ *array.Int64 }

func (c int64Col) int64At(i int) int64 { return c.Value(i) }

type int32Col struct{ *array.Int32 }

func (c int32Col) int64At(i int) int64 { return int64(c.Value(i)) }

type uint32Col struct{ *array.Uint32 }

func (c uint32Col) int64At(i int) int64 { return int64(c.Value(i)) }

func asIntCol(a arrow.Array) (intCol, bool) {
	switch a := a.(type) {
	case *array.Int64:
		return int64Col{a}, true
	case *array.Int32:
		return int32Col{a}, true
	case *array.Uint32:
		return uint32Col{a}, true
	}
	return nil, false
}

// column returns the first column of rec called name, or nil.
func column(rec arrow.Record, name string) arrow.Array {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) == 0 {
		return nil
	}
	return rec.Column(idx[0])
}

// optStr binds an optional text column: absent gives nil, present but not
// text is an error.
func optStr(rec arrow.Record, name string) (strCol, error) {
	return optCol(rec, name, "text", asStrCol)
}

func optInt(rec arrow.Record, name string) (intCol, error) {
	return optCol(rec, name, "an integer", asIntCol)
}

func optBool(rec arrow.Record, name string) (*array.Boolean, error) {
	return optCol(rec, name, "bool", func(a arrow.Array) (*array.Boolean, bool) {
		b, ok := a.(*array.Boolean)
		return b, ok
	})
}

// optCol binds an optional column through view: absent gives the zero
// view, present but of a type view refuses is an error that says what was
// wanted.
func optCol[C any](rec arrow.Record, name, want string, view func(arrow.Array) (C, bool)) (C, error) {
	var none C
	a := column(rec, name)
	if a == nil {
		return none, nil
	}
	c, ok := view(a)
	if !ok {
		return none, fmt.Errorf("column %q has type %s, want %s", name, a.DataType(), want)
	}
	return c, nil
}

// getStr returns a copy of row i of c, or "" when c is absent or the value
// null. The copy matters: Arrow strings are views of buffers that the
// Parquet reader recycles for later pages.
func getStr(c strCol, i int) string {
	if c == nil || c.IsNull(i) {
		return ""
	}
	return strings.Clone(c.Value(i))
}

func getInt(c intCol, i int) int64 {
	if c == nil || c.IsNull(i) {
		return 0
	}
	return c.int64At(i)
}

func getBool(c *array.Boolean, i int) bool {
	return c != nil && !c.IsNull(i) && c.Value(i)
}

// msgCols is a bound list<struct<role, content, ...>> column. Extra struct
// fields (WildChat has many per message) are ignored.
type msgCols struct {
	list          array.ListLike
	elems         *array.Struct
	role, content strCol
}

func bindMessages(a arrow.Array, name string) (msgCols, error) {
	list, ok := a.(array.ListLike)
	if !ok || a.DataType().ID() == arrow.MAP {
		return msgCols{}, fmt.Errorf("column %q has type %s, want a list of structs", name, a.DataType())
	}
	elems, ok := list.ListValues().(*array.Struct)
	if !ok {
		return msgCols{}, fmt.Errorf("column %q has type %s, want a list of structs", name, a.DataType())
	}
	st := elems.DataType().(*arrow.StructType)
	field := func(f string) (strCol, error) {
		idx, ok := st.FieldIdx(f)
		if !ok {
			return nil, fmt.Errorf("column %q has no %q field in its messages", name, f)
		}
		s, ok := asStrCol(elems.Field(idx))
		if !ok {
			return nil, fmt.Errorf("column %q: message field %q has type %s, want text", name, f, st.Field(idx).Type)
		}
		return s, nil
	}
	m := msgCols{list: list, elems: elems}
	var err error
	if m.role, err = field(FieldRole); err != nil {
		return msgCols{}, err
	}
	if m.content, err = field(FieldContent); err != nil {
		return msgCols{}, err
	}
	return m, nil
}

// problem is why a row must be quarantined.
type problem struct {
	reason record.Reason
	detail string
}

func (p *problem) Error() string { return string(p.reason) + ": " + p.detail }

func badf(reason record.Reason, format string, args ...any) *problem {
	return &problem{reason: reason, detail: fmt.Sprintf(format, args...)}
}

// quote shortens s for a detail line: a bogus role could be megabytes.
func quote(s string) string {
	const max = 40
	if len(s) > max {
		s = s[:max] + "..."
	}
	return fmt.Sprintf("%q", strings.ToValidUTF8(s, "\uFFFD"))
}

// messages decodes row i of m. A null list yields MissingConversation; a
// null element, a role conv does not know or text that is not UTF-8 yields
// the matching reason. With liftSystem, a system message at index 0 goes to
// the returned system string instead of the list, as conv.Conversation
// expects.
func (m *msgCols) messages(i int, liftSystem bool) (msgs []conv.Message, system string, p *problem) {
	if m.list.IsNull(i) {
		return nil, "", badf(record.MissingConversation, "the messages list is null")
	}
	start, end := m.list.ValueOffsets(i)
	if start < 0 || end < start || end > int64(m.elems.Len()) {
		// Only a corrupt file gets here; checking first keeps a bogus
		// count from sizing the allocation below.
		return nil, "", badf(record.BadField, "the messages list has offsets [%d, %d) outside its %d elements", start, end, m.elems.Len())
	}
	if end > start {
		msgs = make([]conv.Message, 0, end-start)
	}
	for j := start; j < end; j++ {
		k, n := int(j), j-start
		if m.elems.IsNull(k) {
			return nil, "", badf(record.BadField, "message %d is null", n)
		}
		if m.role.IsNull(k) {
			return nil, "", badf(record.UnknownRole, "message %d has no role", n)
		}
		rs := m.role.Value(k)
		role, ok := conv.ParseRole(rs)
		if !ok {
			if !utf8.ValidString(rs) {
				return nil, "", badf(record.InvalidUTF8, "message %d role is not valid UTF-8", n)
			}
			return nil, "", badf(record.UnknownRole, "message %d has role %s", n, quote(rs))
		}
		var content string
		if !m.content.IsNull(k) {
			content = m.content.Value(k)
			if !utf8.ValidString(content) {
				return nil, "", badf(record.InvalidUTF8, "message %d content is not valid UTF-8", n)
			}
			content = strings.Clone(content)
		}
		if liftSystem && n == 0 && role == conv.System {
			system = content
			continue
		}
		msgs = append(msgs, conv.Message{Role: role, Content: content})
	}
	return msgs, system, nil
}

// checkUTF8 returns an InvalidUTF8 problem naming the first of the given
// (name, value) pairs that is not valid UTF-8.
func checkUTF8(pairs ...string) *problem {
	for k := 0; k+1 < len(pairs); k += 2 {
		if !utf8.ValidString(pairs[k+1]) {
			return badf(record.InvalidUTF8, "%s is not valid UTF-8", pairs[k])
		}
	}
	return nil
}

// rowRecord is the record for row i of rec, the file's row-th: c, or c's
// problem p quarantined with the row as its excerpt.
func rowRecord(c *conv.Conversation, p *problem, file string, rec arrow.Record, i int, row int64) record.Record {
	if p != nil {
		return record.Record{Bad: &record.Bad{
			Source:  conv.Source{File: file, Row: row},
			Reason:  p.reason,
			Detail:  p.detail,
			Excerpt: rowExcerpt(rec, i),
		}}
	}
	return record.Record{Conv: c}
}

// rowExcerpt renders row i of rec as a JSON object and cuts it to an
// excerpt for a quarantined record.
func rowExcerpt(rec arrow.Record, i int) string {
	b := make([]byte, 0, 512)
	b = append(b, '{')
	for c := 0; c < int(rec.NumCols()); c++ {
		if c > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, rec.ColumnName(c))
		b = append(b, ':')
		b = appendJSONValue(b, rec.Column(c), i)
		if len(b) > 4*record.ExcerptBytes {
			break
		}
	}
	b = append(b, '}')
	return record.Excerpt(b)
}
