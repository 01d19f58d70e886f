package parquetio

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/ac3/ac3/pipeline/conv"
)

// TableWriter's rows into Arrow builders, as convbuilder.go does for
// conversations: each value Append gets is checked against its column's
// type, then stored. Lists and structs nest as deep as a schema says; the
// Parquet side (pqschema.go, shred.go) writes those shapes byte for byte as
// pqarrow does (pqcompat_test.go), so what is here is only the mapping from
// Go values to Arrow builders.

// ListOfNullable returns list<element: elem>, its element named "element"
// and nullable: the Parquet LIST convention, which the writer writes
// whatever the Arrow field says (see MessagesType), so a schema read back
// from the file equals this one.
func ListOfNullable(elem arrow.DataType) arrow.DataType {
	return arrow.ListOfField(arrow.Field{Name: "element", Type: elem, Nullable: true})
}

// StringListType returns list<utf8>, as ListOfNullable spells it.
func StringListType() arrow.DataType { return ListOfNullable(arrow.BinaryTypes.String) }

type colKind int

const (
	kindFlat     colKind = iota // utf8, int64, float64 or bool
	kindMessages                // MessagesType
	kindNested                  // another list or struct: see valueAccepts
)

type tableColumn struct {
	name     string
	kind     colKind
	nullable bool
	typ      arrow.DataType
	b        array.Builder
}

// tableBuilder holds TableWriter's rows until fileWriter cuts them into a
// record batch (it is fileWriter's batcher).
type tableBuilder struct {
	rb    *array.RecordBuilder
	cols  []tableColumn
	rows  int
	bytes int64
}

// newTableBuilder returns a builder for rows of sc and the Parquet paths of
// its long text columns (see WriterOptions.writerProps). It fails if sc has
// a column type TableWriter does not support.
func newTableBuilder(sc *arrow.Schema) (*tableBuilder, []string, error) {
	kinds := make([]colKind, sc.NumFields())
	var longText []string
	for i, f := range sc.Fields() {
		switch {
		case f.Type.ID() == arrow.STRING, f.Type.ID() == arrow.INT64, f.Type.ID() == arrow.FLOAT64, f.Type.ID() == arrow.BOOL:
			kinds[i] = kindFlat
		case arrow.TypeEqual(f.Type, MessagesType()):
			kinds[i] = kindMessages
			longText = append(longText, f.Name+".list.element."+FieldContent)
		case f.Type.ID() == arrow.LIST || f.Type.ID() == arrow.STRUCT:
			if err := nestedSupported(f.Type); err != nil {
				return nil, nil, fmt.Errorf("creating table writer: column %q: %w", f.Name, err)
			}
			kinds[i] = kindNested
		default:
			return nil, nil, fmt.Errorf("creating table writer: column %q has type %s, which TableWriter does not support", f.Name, f.Type)
		}
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	cols := make([]tableColumn, len(kinds))
	for i, f := range sc.Fields() {
		cols[i] = tableColumn{name: f.Name, kind: kinds[i], nullable: f.Nullable, typ: f.Type, b: rb.Field(i)}
	}
	return &tableBuilder{rb: rb, cols: cols}, longText, nil
}

// Append adds one row, a value per column in schema order. It checks every
// value before storing any, so a row with a wrong type is refused whole.
func (b *tableBuilder) Append(row []any) error {
	if len(row) != len(b.cols) {
		return fmt.Errorf("appending row: got %d values for %d columns", len(row), len(b.cols))
	}
	for i := range b.cols {
		if err := b.cols[i].accepts(row[i]); err != nil {
			return fmt.Errorf("appending row: %w", err)
		}
	}
	for i := range b.cols {
		b.bytes += appendValue(b.cols[i].b, row[i])
	}
	b.rows++
	return nil
}

func (b *tableBuilder) Len() int     { return b.rows }
func (b *tableBuilder) Bytes() int64 { return b.bytes }
func (b *tableBuilder) Release()     { b.rb.Release() }

func (b *tableBuilder) NewRecord() arrow.Record {
	rows := b.rows
	b.rows, b.bytes = 0, 0
	rec := b.rb.NewRecord()
	b.rb.Reserve(rows)
	return rec
}

// accepts checks v for the column, with errors that name it.
func (c *tableColumn) accepts(v any) error {
	if isNull(v) {
		if !c.nullable {
			return fmt.Errorf("column %q is not nullable but got nil", c.name)
		}
		return nil
	}
	switch c.kind {
	case kindNested:
		if err := valueAccepts(c.typ, false, v); err != nil {
			return fmt.Errorf("column %q: %w", c.name, err)
		}
		return nil
	case kindMessages:
		// Only []conv.Message: valueAccepts would also take messages
		// spelled out as []any.
		if _, ok := v.([]conv.Message); ok {
			return nil
		}
	default:
		if valueAccepts(c.typ, false, v) == nil {
			return nil
		}
	}
	return fmt.Errorf("column %q cannot hold a %T", c.name, v)
}

// nestedSupported reports whether TableWriter can write a column of type dt.
func nestedSupported(dt arrow.DataType) error {
	switch dt.ID() {
	case arrow.STRING, arrow.INT64, arrow.FLOAT64, arrow.BOOL:
		return nil
	case arrow.LIST:
		return nestedSupported(dt.(*arrow.ListType).Elem())
	case arrow.STRUCT:
		st := dt.(*arrow.StructType)
		if st.NumFields() == 0 {
			return errors.New("a struct needs at least one field")
		}
		for _, f := range st.Fields() {
			if err := nestedSupported(f.Type); err != nil {
				return fmt.Errorf("field %q: %w", f.Name, err)
			}
		}
		return nil
	}
	return fmt.Errorf("type %s is not supported inside a list or struct", dt)
}

// valueAccepts checks v as a value of type dt; nullable says whether a null
// may stand there.
func valueAccepts(dt arrow.DataType, nullable bool, v any) error {
	if isNull(v) {
		if !nullable {
			return errors.New("got nil where no null is allowed")
		}
		return nil
	}
	ok := false
	switch dt.ID() {
	case arrow.STRING:
		switch v.(type) {
		case string, []byte, json.RawMessage, conv.Role:
			ok = true
		}
	case arrow.INT64:
		switch v.(type) {
		case int64, int, int32:
			ok = true
		}
	case arrow.FLOAT64:
		switch v.(type) {
		case float64, float32:
			ok = true
		}
	case arrow.BOOL:
		_, ok = v.(bool)
	case arrow.LIST:
		elem := dt.(*arrow.ListType).ElemField()
		switch v := v.(type) {
		case []string:
			ok = elem.Type.ID() == arrow.STRING
		case []conv.Message:
			ok = arrow.TypeEqual(dt, MessagesType())
		case []any:
			for i, x := range v {
				if err := valueAccepts(elem.Type, elem.Nullable, x); err != nil {
					return fmt.Errorf("element %d: %w", i, err)
				}
			}
			return nil
		}
	case arrow.STRUCT:
		st := dt.(*arrow.StructType)
		fields, isList := v.([]any)
		if !isList {
			break
		}
		if len(fields) != st.NumFields() {
			return fmt.Errorf("got %d values for a struct of %d fields", len(fields), st.NumFields())
		}
		for i, f := range st.Fields() {
			if err := valueAccepts(f.Type, f.Nullable, fields[i]); err != nil {
				return fmt.Errorf("field %q: %w", f.Name, err)
			}
		}
		return nil
	}
	if !ok {
		return fmt.Errorf("a %s cannot hold a %T", dt, v)
	}
	return nil
}

// isNull reports whether v stores a null: nil, or a nil slice of a type a
// column takes.
func isNull(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case json.RawMessage:
		return v == nil
	case []byte:
		return v == nil
	case []conv.Message:
		return v == nil
	case []string:
		return v == nil
	case []any:
		return v == nil
	}
	return false
}

// stringValue is the text of a value a string column accepts.
func stringValue(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case json.RawMessage:
		return string(v)
	case conv.Role:
		return string(v)
	}
	return ""
}

// appendValidString appends s with bytes that are not UTF-8 replaced (see
// ConversationBuilder.Append) and returns its size.
func appendValidString(b *array.StringBuilder, s string) int64 {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	b.Append(s)
	return int64(len(s)) + 4
}

// appendValue stores v, already checked by tableColumn.accepts, in b (the
// builder of its column, list element or struct field) and returns roughly
// how many bytes it adds to the row group.
func appendValue(b array.Builder, v any) int64 {
	if isNull(v) {
		b.AppendNull()
		return 1
	}
	switch b := b.(type) {
	case *array.StringBuilder:
		return appendValidString(b, stringValue(v))
	case *array.Int64Builder:
		switch v := v.(type) {
		case int64:
			b.Append(v)
		case int:
			b.Append(int64(v))
		case int32:
			b.Append(int64(v))
		}
	case *array.Float64Builder:
		switch v := v.(type) {
		case float64:
			b.Append(v)
		case float32:
			b.Append(float64(v))
		}
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.ListBuilder:
		b.Append(true)
		n := int64(8)
		vb := b.ValueBuilder()
		switch v := v.(type) {
		case []string:
			sb := vb.(*array.StringBuilder)
			for _, s := range v {
				n += appendValidString(sb, s)
			}
		case []conv.Message:
			sb := vb.(*array.StructBuilder)
			role, content := sb.FieldBuilder(0).(*array.StringBuilder), sb.FieldBuilder(1).(*array.StringBuilder)
			for _, m := range v {
				sb.Append(true)
				n += appendValidString(role, string(m.Role))
				n += appendValidString(content, m.Content)
			}
		case []any:
			for _, x := range v {
				n += appendValue(vb, x)
			}
		}
		return n
	case *array.StructBuilder:
		b.Append(true)
		n := int64(0)
		for i, x := range v.([]any) {
			n += appendValue(b.FieldBuilder(i), x)
		}
		return n
	}
	return 8
}
