package parquetio

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/ac3/ac3/pipeline/conv"
)

// Nested columns of TableWriter other than MessagesType: lists and structs
// of the flat types, nested as deep as a schema says. The Parquet side
// (pqschema.go, shred.go) has written these shapes all along, byte for byte
// as pqarrow does (pqcompat_test.go); what is here is only the mapping from
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

// nestedAccepts checks a non-null value of a list or struct column.
func nestedAccepts(dt arrow.DataType, v any) error { return valueAccepts(dt, false, v) }

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

// appendNested stores v, already checked by valueAccepts, and returns
// roughly how many bytes it adds to the row group.
func appendNested(b array.Builder, v any) int64 {
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
				n += appendNested(vb, x)
			}
		}
		return n
	case *array.StructBuilder:
		b.Append(true)
		n := int64(0)
		for i, x := range v.([]any) {
			n += appendNested(b.FieldBuilder(i), x)
		}
		return n
	}
	return 8
}
