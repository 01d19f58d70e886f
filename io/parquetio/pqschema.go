package parquetio

import (
	"bytes"
	"encoding/base64"
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/metadata"
	"github.com/apache/arrow/go/v17/parquet/schema"
)

// This file maps the Arrow schemas our writers take to Parquet schemas.
//
// We used to hand records to Arrow's pqarrow package, which does this and
// much more (see doc.go for why it went). The mapping below is the part of
// pqarrow's that our writers use, spelled the same way, so a file written
// here is byte for byte the file pqarrow wrote for the same rows (a test
// compares the two): Parquet's three-level LIST layout with a repeated group
// "list" and an optional "element", strings as BYTE_ARRAY annotated String,
// integers annotated with their width and sign, and the Arrow schema itself
// stored, IPC-serialised and base64-encoded, under the "ARROW:schema" key.

// arrowSchemaKey is the file metadata key under which Arrow writers store
// the IPC-serialised Arrow schema.
const arrowSchemaKey = "ARROW:schema"

// toParquetSchema returns the Parquet schema root for sc. It supports the
// column types our writers produce: bool, int32, int64, float32, float64,
// utf8, binary, and lists and structs of them.
func toParquetSchema(sc *arrow.Schema, props *parquet.WriterProperties) (*schema.GroupNode, error) {
	nodes, err := fieldNodes(sc.Fields())
	if err != nil {
		return nil, err
	}
	return schema.NewGroupNode(props.RootName(), props.RootRepetition(), nodes, -1)
}

// fieldNodes returns the Parquet nodes of fields, in order.
func fieldNodes(fields []arrow.Field) (schema.FieldList, error) {
	nodes := make(schema.FieldList, 0, len(fields))
	for _, f := range fields {
		n, err := fieldNode(f.Name, f)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

func repetition(nullable bool) parquet.Repetition {
	if nullable {
		return parquet.Repetitions.Optional
	}
	return parquet.Repetitions.Required
}

func fieldNode(name string, f arrow.Field) (schema.Node, error) {
	var (
		logical schema.LogicalType = schema.NoLogicalType{}
		typ     parquet.Type
	)
	switch f.Type.ID() {
	case arrow.BOOL:
		typ = parquet.Types.Boolean
	case arrow.INT32:
		typ, logical = parquet.Types.Int32, schema.NewIntLogicalType(32, true)
	case arrow.INT64:
		typ, logical = parquet.Types.Int64, schema.NewIntLogicalType(64, true)
	case arrow.FLOAT32:
		typ = parquet.Types.Float
	case arrow.FLOAT64:
		typ = parquet.Types.Double
	case arrow.STRING:
		typ, logical = parquet.Types.ByteArray, schema.StringLogicalType{}
	case arrow.BINARY:
		typ = parquet.Types.ByteArray
	case arrow.STRUCT:
		st := f.Type.(*arrow.StructType)
		if st.NumFields() == 0 {
			return nil, fmt.Errorf("column %q: a struct needs at least one field", name)
		}
		children, err := fieldNodes(st.Fields())
		if err != nil {
			return nil, err
		}
		return schema.NewGroupNode(name, repetition(f.Nullable), children, -1)
	case arrow.LIST:
		// The element is always optional, whatever the Arrow field says:
		// that is the LIST convention pqarrow and pyarrow write, and what
		// the level computation in shred.go assumes.
		elem := f.Type.(*arrow.ListType).Elem()
		child, err := fieldNode(name, arrow.Field{Name: name, Type: elem, Nullable: true})
		if err != nil {
			return nil, err
		}
		return schema.ListOf(child, repetition(f.Nullable), -1)
	default:
		return nil, fmt.Errorf("column %q has type %s, which the Parquet writer does not support", name, f.Type)
	}
	return schema.NewPrimitiveNodeLogical(name, repetition(f.Nullable), logical, typ, -1, -1)
}

// fileMetadata is the key-value metadata a file of schema sc carries: the
// schema's own metadata (ac3.schema), then the Arrow schema.
//
// The stored Arrow schema is for other Arrow-based readers (pyarrow gets
// back the exact types and the list element names from it); DuckDB and our
// own reader do not need it, as the Parquet schema and the ac3.schema key
// say all they use. It is kept so files stay what they were.
func fileMetadata(sc *arrow.Schema, mem memory.Allocator) metadata.KeyValueMetadata {
	md := sc.Metadata()
	meta := make(metadata.KeyValueMetadata, 0, md.Len()+1)
	for i, k := range md.Keys() {
		meta.Append(k, md.Values()[i])
	}
	// A schema message and an end-of-stream marker, as Arrow's Flight and
	// pqarrow serialise a schema.
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(sc), ipc.WithAllocator(mem))
	_ = w.Close() // writes to memory: cannot fail
	meta.Append(arrowSchemaKey, base64.StdEncoding.EncodeToString(buf.Bytes()))
	return meta
}
