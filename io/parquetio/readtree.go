package parquetio

import (
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/schema"
)

// This file maps a Parquet schema to Arrow types for reading, as a tree of
// readNodes that assemble.go turns into Arrow arrays. It follows the
// Parquet format's rules for nested types (LogicalTypes.md: LIST and MAP
// annotations, the older two-level lists and unannotated repeated fields)
// and the same Arrow types pqarrow chose, so the decoders see what they saw
// before: strings as utf8, integers at their annotated width and sign,
// timestamps with tz "UTC" when adjusted to UTC, lists and structs as such.
//
// The Arrow schema that Arrow writers store under ARROW:schema is not
// consulted. It only refines types the Parquet schema already gives
// (large_string for string, a named time zone for "UTC", dictionary for
// plain), none of which changes what the decoders produce, and decoding it
// would mean parsing a flatbuffer from the file for nothing.

type nodeKind uint8

const (
	leafNode nodeKind = iota
	structNode
	listNode
	mapNode
)

// readNode is one Arrow field of the file: a leaf column, or a struct, list
// or map over other nodes.
type readNode struct {
	kind     nodeKind
	field    arrow.Field
	info     file.LevelInfo // as pqarrow computes them for each kind
	children []*readNode
	col      int // leaf: index of the Parquet column

	// For a struct: the child whose levels give the struct's validity,
	// preferably one without repeated descendants (fewest levels), and
	// whether it has any.
	levelsFrom    *readNode
	repeatedChild bool

	rr     file.RecordReader // leaf: set while a row group is open
	pages  *pageReader       // leaf: the open row group's pages
	values int64             // leaf: values (levels) of the open row group read so far
}

func (n *readNode) hasRepeated() bool {
	switch n.kind {
	case listNode, mapNode:
		return true
	case structNode:
		return n.repeatedChild
	}
	return false
}

// leaves appends the leaf nodes under n, in column order.
func (n *readNode) leaves(out []*readNode) []*readNode {
	if n.kind == leafNode {
		return append(out, n)
	}
	for _, c := range n.children {
		out = c.leaves(out)
	}
	return out
}

// readTree returns a node per top-level field of sc.
func readTree(sc *schema.Schema) ([]*readNode, error) {
	root := sc.Root()
	nodes := make([]*readNode, 0, root.NumFields())
	for i := range root.NumFields() {
		n, err := toReadNode(sc, root.Field(i), file.LevelInfo{NullSlotUsage: 1})
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", root.Field(i).Name(), err)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// toReadNode maps n, below a parent whose levels are lv. lv is a copy: the
// increments made here are for n and its children only.
func toReadNode(sc *schema.Schema, n schema.Node, lv file.LevelInfo) (*readNode, error) {
	if g, ok := n.(*schema.GroupNode); ok {
		return groupReadNode(sc, g, lv)
	}
	p := n.(*schema.PrimitiveNode)
	typ, err := arrowLeafType(p)
	if err != nil {
		return nil, err
	}
	col := sc.ColumnIndexByNode(p)
	if col < 0 {
		return nil, errors.New("leaf not found in the schema")
	}
	if p.RepetitionType() == parquet.Repetitions.Repeated {
		// A repeated primitive outside a LIST group: a list of required
		// values.
		ancestor := lv.IncrementRepeated()
		leaf := &readNode{kind: leafNode, field: arrow.Field{Name: p.Name(), Type: typ}, info: lv, col: col}
		return newListNode(p.Name(), false, lv, ancestor, leaf, false), nil
	}
	lv.Increment(p)
	return &readNode{kind: leafNode, col: col, info: lv,
		field: arrow.Field{Name: p.Name(), Type: typ, Nullable: p.RepetitionType() == parquet.Repetitions.Optional}}, nil
}

func newListNode(name string, nullable bool, lv file.LevelInfo, ancestor int16, elem *readNode, isMap bool) *readNode {
	n := &readNode{kind: listNode, info: lv, children: []*readNode{elem}}
	n.info.RepeatedAncestorDefLevel = ancestor
	var typ arrow.DataType = arrow.ListOfField(arrow.Field{Name: elem.field.Name, Type: elem.field.Type, Nullable: true})
	if isMap {
		n.kind = mapNode
		st := elem.field.Type.(*arrow.StructType)
		typ = arrow.MapOfWithMetadata(st.Field(0).Type, st.Field(0).Metadata, st.Field(1).Type, st.Field(1).Metadata)
	}
	n.field = arrow.Field{Name: name, Type: typ, Nullable: nullable}
	return n
}

func groupReadNode(sc *schema.Schema, g *schema.GroupNode, lv file.LevelInfo) (*readNode, error) {
	optional := g.RepetitionType() == parquet.Repetitions.Optional
	switch {
	case g.LogicalType().Equals(schema.NewListLogicalType()):
		return listReadNode(sc, g, lv)
	case g.LogicalType().Equals(schema.MapLogicalType{}):
		return mapReadNode(sc, g, lv)
	case g.RepetitionType() == parquet.Repetitions.Repeated:
		// An unannotated repeated group: a list of required structs.
		ancestor := lv.IncrementRepeated()
		st, err := structReadNode(sc, g, lv, false)
		if err != nil {
			return nil, err
		}
		return newListNode(g.Name(), false, lv, ancestor, st, false), nil
	}
	lv.Increment(g)
	return structReadNode(sc, g, lv, optional)
}

func structReadNode(sc *schema.Schema, g *schema.GroupNode, lv file.LevelInfo, nullable bool) (*readNode, error) {
	if g.NumFields() == 0 {
		return nil, fmt.Errorf("group %q has no fields", g.Name())
	}
	n := &readNode{kind: structNode, info: lv}
	fields := make([]arrow.Field, 0, g.NumFields())
	for i := range g.NumFields() {
		c, err := toReadNode(sc, g.Field(i), lv)
		if err != nil {
			return nil, err
		}
		n.children = append(n.children, c)
		fields = append(fields, c.field)
	}
	n.field = arrow.Field{Name: g.Name(), Type: arrow.StructOf(fields...), Nullable: nullable}
	n.pickLevelsChild()
	return n, nil
}

// pickLevelsChild chooses the child whose levels give the struct's
// validity, as pqarrow does.
func (n *readNode) pickLevelsChild() {
	n.levelsFrom, n.repeatedChild = nil, false
	for _, c := range n.children {
		if !c.hasRepeated() {
			n.levelsFrom = c
			return
		}
	}
	n.levelsFrom, n.repeatedChild = n.children[0], true
}

func listReadNode(sc *schema.Schema, g *schema.GroupNode, lv file.LevelInfo) (*readNode, error) {
	if g.NumFields() != 1 {
		return nil, errors.New("a LIST group must have exactly one child")
	}
	if g.RepetitionType() == parquet.Repetitions.Repeated {
		return nil, errors.New("a LIST group must not be repeated")
	}
	lv.Increment(g)
	rep := g.Field(0)
	if rep.RepetitionType() != parquet.Repetitions.Repeated {
		return nil, errors.New("the child of a LIST group must be repeated")
	}
	ancestor := lv.IncrementRepeated()
	var (
		elem *readNode
		err  error
	)
	switch r := rep.(type) {
	case *schema.GroupNode:
		// Three levels (group, repeated group "list", element), unless the
		// repeated group has several fields or is called "array" or
		// "<name>_tuple": then it is itself the element, a struct.
		if r.NumFields() == 1 && r.Name() != "array" && r.Name() != g.Name()+"_tuple" {
			elem, err = toReadNode(sc, r.Field(0), lv)
		} else {
			elem, err = structReadNode(sc, r, lv, false)
		}
	case *schema.PrimitiveNode:
		// Two levels: the repeated field is the required element.
		var typ arrow.DataType
		if typ, err = arrowLeafType(r); err == nil {
			elem = &readNode{kind: leafNode, field: arrow.Field{Name: r.Name(), Type: typ}, info: lv, col: sc.ColumnIndexByNode(r)}
		}
	}
	if err != nil {
		return nil, err
	}
	return newListNode(g.Name(), g.RepetitionType() == parquet.Repetitions.Optional, lv, ancestor, elem, false), nil
}

func mapReadNode(sc *schema.Schema, g *schema.GroupNode, lv file.LevelInfo) (*readNode, error) {
	if g.NumFields() != 1 {
		return nil, errors.New("a MAP group must have exactly one child")
	}
	kv, ok := g.Field(0).(*schema.GroupNode)
	if !ok || kv.RepetitionType() != parquet.Repetitions.Repeated || g.RepetitionType() == parquet.Repetitions.Repeated {
		return nil, errors.New("a MAP group must hold one repeated group")
	}
	switch {
	case kv.NumFields() == 1:
		// Keys only, a set: read as a list, as pqarrow does.
		return listReadNode(sc, g, lv)
	case kv.NumFields() != 2:
		return nil, fmt.Errorf("a MAP's key-value group has %d fields, want 2", kv.NumFields())
	case kv.Field(0).RepetitionType() != parquet.Repetitions.Required:
		return nil, errors.New("MAP keys must be required")
	}
	lv.Increment(g)
	ancestor := lv.IncrementRepeated()
	entries, err := structReadNode(sc, kv, lv, false)
	if err != nil {
		return nil, err
	}
	if entries.children[0].hasRepeated() || entries.children[0].kind != leafNode {
		return nil, errors.New("MAP keys must be primitive")
	}
	return newListNode(g.Name(), g.RepetitionType() == parquet.Repetitions.Optional, lv, ancestor, entries, true), nil
}

// arrowLeafType is the Arrow type a primitive column is read as.
func arrowLeafType(p *schema.PrimitiveNode) (arrow.DataType, error) {
	logical := p.LogicalType()
	if !logical.IsValid() || logical.Equals(schema.NullLogicalType{}) {
		return arrow.Null, nil
	}
	unsupported := func() (arrow.DataType, error) {
		return nil, fmt.Errorf("%s annotated %s is not supported", p.PhysicalType(), logical)
	}
	switch p.PhysicalType() {
	case parquet.Types.Boolean:
		return arrow.FixedWidthTypes.Boolean, nil
	case parquet.Types.Int32:
		switch lt := logical.(type) {
		case schema.NoLogicalType:
			return arrow.PrimitiveTypes.Int32, nil
		case *schema.IntLogicalType:
			return arrowInt(lt)
		case schema.DateLogicalType:
			return arrow.FixedWidthTypes.Date32, nil
		case *schema.TimeLogicalType:
			if lt.TimeUnit() == schema.TimeUnitMillis {
				return arrow.FixedWidthTypes.Time32ms, nil
			}
		}
		return unsupported()
	case parquet.Types.Int64:
		switch lt := logical.(type) {
		case schema.NoLogicalType:
			return arrow.PrimitiveTypes.Int64, nil
		case *schema.IntLogicalType:
			return arrowInt(lt)
		case *schema.TimeLogicalType:
			switch lt.TimeUnit() {
			case schema.TimeUnitMicros:
				return arrow.FixedWidthTypes.Time64us, nil
			case schema.TimeUnitNanos:
				return arrow.FixedWidthTypes.Time64ns, nil
			}
		case *schema.TimestampLogicalType:
			tz := ""
			// Converted types count as UTC, per the format's
			// compatibility rules.
			if lt.IsAdjustedToUTC() || lt.IsFromConvertedType() {
				tz = "UTC"
			}
			switch lt.TimeUnit() {
			case schema.TimeUnitMillis:
				return &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: tz}, nil
			case schema.TimeUnitMicros:
				return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: tz}, nil
			case schema.TimeUnitNanos:
				return &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: tz}, nil
			}
		}
		return unsupported()
	case parquet.Types.Int96:
		return arrow.FixedWidthTypes.Timestamp_ns, nil
	case parquet.Types.Float:
		return arrow.PrimitiveTypes.Float32, nil
	case parquet.Types.Double:
		return arrow.PrimitiveTypes.Float64, nil
	case parquet.Types.ByteArray:
		switch logical.(type) {
		case schema.StringLogicalType:
			return arrow.BinaryTypes.String, nil
		case schema.NoLogicalType, schema.EnumLogicalType, schema.JSONLogicalType, schema.BSONLogicalType:
			return arrow.BinaryTypes.Binary, nil
		}
		return unsupported()
	case parquet.Types.FixedLenByteArray:
		switch logical.(type) {
		case schema.NoLogicalType, schema.IntervalLogicalType, schema.UUIDLogicalType:
			if p.TypeLength() <= 0 {
				return nil, fmt.Errorf("fixed-length byte array of length %d", p.TypeLength())
			}
			return &arrow.FixedSizeBinaryType{ByteWidth: p.TypeLength()}, nil
		}
		return unsupported()
	}
	return unsupported()
}

func arrowInt(lt *schema.IntLogicalType) (arrow.DataType, error) {
	switch {
	case lt.BitWidth() == 8 && lt.IsSigned():
		return arrow.PrimitiveTypes.Int8, nil
	case lt.BitWidth() == 8:
		return arrow.PrimitiveTypes.Uint8, nil
	case lt.BitWidth() == 16 && lt.IsSigned():
		return arrow.PrimitiveTypes.Int16, nil
	case lt.BitWidth() == 16:
		return arrow.PrimitiveTypes.Uint16, nil
	case lt.BitWidth() == 32 && lt.IsSigned():
		return arrow.PrimitiveTypes.Int32, nil
	case lt.BitWidth() == 32:
		return arrow.PrimitiveTypes.Uint32, nil
	case lt.BitWidth() == 64 && lt.IsSigned():
		return arrow.PrimitiveTypes.Int64, nil
	case lt.BitWidth() == 64:
		return arrow.PrimitiveTypes.Uint64, nil
	}
	return nil, fmt.Errorf("integer of %d bits", lt.BitWidth())
}

// keepElementFields narrows a list of structs to the named fields of its
// elements, in file order, if the elements have them all; otherwise it
// leaves n whole, and the decoder reports what is missing.
func (n *readNode) keepElementFields(names []string) {
	if n.kind != listNode || n.children[0].kind != structNode {
		return
	}
	el := n.children[0]
	var kept []*readNode
	for _, c := range el.children {
		if slices.Contains(names, c.field.Name) && !slices.ContainsFunc(kept, func(k *readNode) bool { return k.field.Name == c.field.Name }) {
			kept = append(kept, c)
		}
	}
	if len(kept) != len(names) {
		return
	}
	fields := make([]arrow.Field, len(kept))
	for i, c := range kept {
		fields[i] = c.field
	}
	el.children = kept
	el.field.Type = arrow.StructOf(fields...)
	el.pickLevelsChild()
	n.field.Type = arrow.ListOfField(arrow.Field{Name: el.field.Name, Type: el.field.Type, Nullable: true})
}
