package parquetio

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/ac3/ac3/io/atomicfile"
	"github.com/ac3/ac3/pipeline/conv"
)

// TableWriter streams rows of a schema to a Parquet file, with the same
// bounded row groups, atomic Create and deterministic output as Writer.
// Exports other than whole conversations (curated contexts, annotations,
// training pairs, the quarantine table) use it.
//
// Supported column types and the Go values Append takes for them:
//
//	utf8                        string, []byte, json.RawMessage, conv.Role
//	int64                       int64, int, int32
//	float64                     float64, float32
//	bool                        bool
//	MessagesType()              []conv.Message
//	list<utf8>                  []string, or []any of the element's values
//	list<T>                     []any, one value of T per element
//	struct<...>                 []any, one value per field in field order
//
// where T, and a struct's fields, are any type of this table (lists of
// structs of lists too). Each becomes a nested Parquet column (the
// three-level LIST layout, groups for structs), as MessagesType does.
//
// nil (or a nil []byte, json.RawMessage, []conv.Message, []string or []any)
// stores a null, which is allowed only in a nullable field; a list's
// elements are nullable when its element field is (ListOfNullable and
// MessagesType make them so, as the Parquet LIST convention writes them).
//
// A TableWriter is not safe for concurrent use.
type TableWriter struct {
	fw   *fileWriter
	tb   *tableBuilder
	cols []tableColumn
}

type colKind int

const (
	kindString colKind = iota
	kindInt64
	kindFloat64
	kindBool
	kindMessages
	kindNested // a list or struct other than MessagesType: see nestedAccepts
)

type tableColumn struct {
	name     string
	kind     colKind
	nullable bool
	typ      arrow.DataType
	b        array.Builder
	// set for kindMessages only
	msg           *array.StructBuilder
	role, content *array.StringBuilder
}

// NewTableWriter starts a Parquet file of schema sc on w. It fails if sc has
// a column type listed in neither TableWriter's doc nor MessagesType. Close
// finishes the file but does not close w.
func NewTableWriter(w io.Writer, sc *arrow.Schema, opts WriterOptions) (*TableWriter, error) {
	return newTableWriter(w, nil, sc, opts)
}

// CreateTable starts a Parquet file of schema sc at path, written to a
// temporary file that Close renames into place and Abort removes.
func CreateTable(path string, sc *arrow.Schema, opts WriterOptions) (*TableWriter, error) {
	af, err := atomicfile.Create(path)
	if err != nil {
		return nil, err
	}
	t, err := newTableWriter(af, af, sc, opts)
	if err != nil {
		_ = af.Abort()
		return nil, err
	}
	return t, nil
}

func newTableWriter(w io.Writer, af *atomicfile.File, sc *arrow.Schema, opts WriterOptions) (*TableWriter, error) {
	kinds := make([]colKind, sc.NumFields())
	var longText []string
	for i, f := range sc.Fields() {
		switch {
		case f.Type.ID() == arrow.STRING:
			kinds[i] = kindString
		case f.Type.ID() == arrow.INT64:
			kinds[i] = kindInt64
		case f.Type.ID() == arrow.FLOAT64:
			kinds[i] = kindFloat64
		case f.Type.ID() == arrow.BOOL:
			kinds[i] = kindBool
		case arrow.TypeEqual(f.Type, MessagesType()):
			kinds[i] = kindMessages
			longText = append(longText, f.Name+".list.element."+FieldContent)
		case f.Type.ID() == arrow.LIST || f.Type.ID() == arrow.STRUCT:
			if err := nestedSupported(f.Type); err != nil {
				return nil, fmt.Errorf("creating table writer: column %q: %w", f.Name, err)
			}
			kinds[i] = kindNested
		default:
			return nil, fmt.Errorf("creating table writer: column %q has type %s, which TableWriter does not support", f.Name, f.Type)
		}
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	tb := &tableBuilder{rb: rb}
	cols := make([]tableColumn, len(kinds))
	for i, f := range sc.Fields() {
		c := tableColumn{name: f.Name, kind: kinds[i], nullable: f.Nullable, typ: f.Type, b: rb.Field(i)}
		if c.kind == kindMessages {
			c.msg = rb.Field(i).(*array.ListBuilder).ValueBuilder().(*array.StructBuilder)
			c.role = c.msg.FieldBuilder(0).(*array.StringBuilder)
			c.content = c.msg.FieldBuilder(1).(*array.StringBuilder)
		}
		cols[i] = c
	}
	fw, err := newFileWriter(w, af, sc, tb, opts, longText, nil)
	if err != nil {
		rb.Release()
		return nil, err
	}
	return &TableWriter{fw: fw, tb: tb, cols: cols}, nil
}

// Append adds one row, a value per column in schema order. It checks every
// value before storing any, so a row with a wrong type is refused whole and
// the writer stays usable. Append may write a row group, and so block on
// the output.
func (t *TableWriter) Append(row []any) error {
	if err := t.fw.check(); err != nil {
		return err
	}
	if len(row) != len(t.cols) {
		return fmt.Errorf("appending row: got %d values for %d columns", len(row), len(t.cols))
	}
	for i := range t.cols {
		if err := t.cols[i].accepts(row[i]); err != nil {
			return fmt.Errorf("appending row: %w", err)
		}
	}
	for i := range t.cols {
		t.tb.bytes += t.cols[i].append(row[i])
	}
	t.tb.rows++
	return t.fw.rowAdded()
}

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

func (c *tableColumn) accepts(v any) error {
	if isNull(v) {
		if !c.nullable {
			return fmt.Errorf("column %q is not nullable but got nil", c.name)
		}
		return nil
	}
	ok := false
	switch c.kind {
	case kindString:
		switch v.(type) {
		case string, []byte, json.RawMessage, conv.Role:
			ok = true
		}
	case kindInt64:
		switch v.(type) {
		case int64, int, int32:
			ok = true
		}
	case kindFloat64:
		switch v.(type) {
		case float64, float32:
			ok = true
		}
	case kindBool:
		_, ok = v.(bool)
	case kindMessages:
		_, ok = v.([]conv.Message)
	case kindNested:
		if err := nestedAccepts(c.typ, v); err != nil {
			return fmt.Errorf("column %q: %w", c.name, err)
		}
		return nil
	}
	if !ok {
		return fmt.Errorf("column %q cannot hold a %T", c.name, v)
	}
	return nil
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

// append stores v, already checked by accepts, and returns roughly how many
// bytes it adds to the row group.
func (c *tableColumn) append(v any) int64 {
	if isNull(v) {
		c.b.AppendNull()
		return 1
	}
	switch c.kind {
	case kindString:
		return appendValidString(c.b.(*array.StringBuilder), stringValue(v))
	case kindInt64:
		var n int64
		switch v := v.(type) {
		case int64:
			n = v
		case int:
			n = int64(v)
		case int32:
			n = int64(v)
		}
		c.b.(*array.Int64Builder).Append(n)
	case kindFloat64:
		var f float64
		switch v := v.(type) {
		case float64:
			f = v
		case float32:
			f = float64(v)
		}
		c.b.(*array.Float64Builder).Append(f)
	case kindBool:
		c.b.(*array.BooleanBuilder).Append(v.(bool))
	case kindMessages:
		msgs := v.([]conv.Message)
		c.b.(*array.ListBuilder).Append(true)
		n := int64(8)
		for i := range msgs {
			c.msg.Append(true)
			n += appendValidString(c.role, string(msgs[i].Role))
			n += appendValidString(c.content, msgs[i].Content)
		}
		return n
	case kindNested:
		return appendNested(c.b, v)
	}
	return 8
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

// Close writes any buffered rows and the footer, then (for CreateTable)
// renames the file into place. It returns the first error of the writer's
// life.
func (t *TableWriter) Close() error { return t.fw.close() }

// Abort gives up on the file, as Writer.Abort does.
func (t *TableWriter) Abort() error { return t.fw.abort() }

// tableBuilder adapts an Arrow RecordBuilder to fileWriter's batcher.
type tableBuilder struct {
	rb    *array.RecordBuilder
	rows  int
	bytes int64
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
