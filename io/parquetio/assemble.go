package parquetio

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/schema"
)

// Record assembly, the reverse of shred.go: each leaf column is decoded a
// batch of rows at a time by Arrow's record reader (parquet/file), which
// returns the leaf's values laid out as Arrow slots (nulls included) with
// their definition and repetition levels; from those levels a list gets
// its offsets and validity and a struct its validity, using the level
// helpers of parquet/file, and the arrays are put together bottom-up.
//
// Everything runs on the caller's goroutine, so a decoder that panics on a
// corrupt page is caught by CatchPanic like any other (pqarrow decoded
// struct children on goroutines of its own, where a panic ended the
// process; that is why the reader used to decode nested columns twice).

// loadBatch decodes exactly rows records of every leaf under n from the
// open row group; a leaf whose pages end or fail first is an error naming
// its column (sc is the file's schema).
func (n *readNode) loadBatch(rows int64, sc *schema.Schema) error {
	if n.kind != leafNode {
		for _, c := range n.children {
			if err := c.loadBatch(rows, sc); err != nil {
				return err
			}
		}
		return nil
	}
	rr := n.rr
	rr.Reset()
	if err := rr.Reserve(rows); err != nil {
		return fmt.Errorf("column %s: %w", sc.Column(n.col).Path(), err)
	}
	var read int64
	for read < rows {
		got, err := rr.ReadRecords(rows - read)
		if err != nil {
			return fmt.Errorf("column %s: %w", sc.Column(n.col).Path(), err)
		}
		if got == 0 {
			break
		}
		read += got
	}
	if read != rows {
		return &shortPages{column: sc.Column(n.col).Path(), read: read, cause: n.pagesEnded()}
	}
	// A column without levels has a value per row; one with levels has a
	// level per value, and LevelsPos counts those this batch took.
	if sc.Column(n.col).MaxDefinitionLevel() > 0 {
		n.values += rr.LevelsPos()
	} else {
		n.values += read
	}
	return nil
}

// shortPages reports a leaf whose pages ended, or stopped decoding, before
// the rows of a batch; the caller says where in the row group that is.
type shortPages struct {
	column string
	read   int64 // rows of the batch it gave
	cause  string
}

func (e *shortPages) Error() string {
	return fmt.Sprintf("column %s: its pages end %d rows into the batch: %s", e.column, e.read, e.cause)
}

// pagesEnded says why the leaf's pages ended, for an error about it.
func (n *readNode) pagesEnded() string {
	if n.pages != nil && n.pages.err != nil {
		return n.pages.err.Error()
	}
	return "no more values, or values that do not decode"
}

// levels returns the definition and repetition levels of the last batch
// that give n's structure: a leaf's own, or those of the child a struct
// or list takes its shape from.
func (n *readNode) levels() (def, rep []int16) {
	switch n.kind {
	case leafNode:
		pos := int(n.rr.LevelsPos())
		def = n.rr.DefLevels()
		rep = n.rr.RepLevels()
		if len(def) >= pos {
			def = def[:pos]
		}
		if len(rep) >= pos {
			rep = rep[:pos]
		}
		return def, rep
	case structNode:
		return n.levelsFrom.levels()
	}
	return n.children[0].levels()
}

// build returns the last batch of n as an array of at most bound values.
func (n *readNode) build(bound int64, mem memory.Allocator) (arrow.Array, error) {
	switch n.kind {
	case leafNode:
		return transferLeaf(n.rr, n.field.Type)
	case structNode:
		return n.buildStruct(bound, mem)
	}
	return n.buildList(bound, mem)
}

func (n *readNode) buildStruct(bound int64, mem memory.Allocator) (arrow.Array, error) {
	vio := file.ValidityBitmapInputOutput{ReadUpperBound: bound, Read: bound}
	var validity *memory.Buffer
	if bound > 0 && (n.repeatedChild || n.field.Nullable) {
		validity = memory.NewResizableBuffer(mem)
		defer validity.Release()
		validity.Resize(int(bitutil.BytesForBits(bound)))
		vio.ValidBits = validity.Bytes()
		def, rep := n.levels()
		if n.repeatedChild {
			if err := file.DefRepLevelsToBitmap(def, rep, n.info, &vio); err != nil {
				return nil, err
			}
		} else {
			file.DefLevelsToBitmap(def, n.info, &vio)
		}
		validity.Resize(int(bitutil.BytesForBits(vio.Read)))
	}
	children := make([]arrow.ArrayData, 0, len(n.children))
	defer func() {
		for _, c := range children {
			c.Release()
		}
	}()
	for _, c := range n.children {
		a, err := c.build(bound, mem)
		if err != nil {
			return nil, err
		}
		children = append(children, a.Data())
		a.Data().Retain()
		a.Release()
	}
	if validity == nil {
		vio.Read = int64(children[0].Len())
	}
	for i, c := range children {
		if int64(c.Len()) < vio.Read {
			return nil, fmt.Errorf("field %q has %d values where its struct has %d", n.children[i].field.Name, c.Len(), vio.Read)
		}
	}
	buffers := []*memory.Buffer{nil}
	if vio.NullCount > 0 {
		buffers[0] = validity
	}
	data := array.NewData(n.field.Type, int(vio.Read), buffers, children, int(vio.NullCount), 0)
	defer data.Release()
	return array.NewStructData(data), nil
}

func (n *readNode) buildList(bound int64, mem memory.Allocator) (arrow.Array, error) {
	def, rep := n.levels()
	if len(rep) < len(def) {
		return nil, errors.New("fewer repetition levels than definition levels")
	}
	vio := file.ValidityBitmapInputOutput{ReadUpperBound: bound}
	var validity *memory.Buffer
	if n.field.Nullable {
		validity = memory.NewResizableBuffer(mem)
		defer validity.Release()
		validity.Resize(int(bitutil.BytesForBits(bound)))
		vio.ValidBits = validity.Bytes()
	}
	offsets := memory.NewResizableBuffer(mem)
	defer offsets.Release()
	offsets.Resize(arrow.Int32Traits.BytesRequired(int(bound) + 1))
	offs := arrow.Int32Traits.CastFromBytes(offsets.Bytes())
	if err := file.DefRepLevelsToListInfo(def, rep, n.info, &vio, offs); err != nil {
		return nil, err
	}
	if vio.Read > bound {
		return nil, fmt.Errorf("%d lists in a batch of at most %d", vio.Read, bound)
	}
	// A null element of a nested list takes a slot too, so the elements
	// are bounded by the last offset plus the nulls.
	elems, err := n.children[0].build(int64(offs[vio.Read])+vio.NullCount, mem)
	if err != nil {
		return nil, err
	}
	defer elems.Release()
	if last := int(offs[vio.Read]); last > elems.Len() || last < 0 {
		return nil, fmt.Errorf("lists end at element %d of %d", last, elems.Len())
	}
	offsets.Resize(arrow.Int32Traits.BytesRequired(int(vio.Read) + 1))
	buffers := []*memory.Buffer{nil, offsets}
	if validity != nil {
		validity.Resize(int(bitutil.BytesForBits(vio.Read)))
		if vio.NullCount > 0 {
			buffers[0] = validity
		}
	}
	child := elems.Data()
	if n.kind == mapNode {
		// The entries struct, retyped to the map's own entry type (its
		// field names are the map's, whatever the file called them).
		entry := n.field.Type.(*arrow.MapType).Elem()
		child = array.NewData(entry, child.Len(), child.Buffers(), child.Children(), child.NullN(), child.Offset())
		defer child.Release()
	}
	data := array.NewData(n.field.Type, int(vio.Read), buffers, []arrow.ArrayData{child}, int(vio.NullCount), 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

// transferLeaf turns a leaf's decoded batch into an Arrow array of type dt,
// taking over the record reader's buffers where the layouts agree.
func transferLeaf(rr file.RecordReader, dt arrow.DataType) (arrow.Array, error) {
	switch dt.ID() {
	case arrow.NULL:
		return array.NewNull(rr.ValuesWritten()), nil
	case arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64, arrow.TIMESTAMP:
		if ts, ok := dt.(*arrow.TimestampType); ok && ts.Unit == arrow.Nanosecond && rr.Type() == parquet.Types.Int96 {
			return transferInt96(rr, dt), nil
		}
		if err := checkValues(rr, dt.(arrow.FixedWidthDataType).Bytes()); err != nil {
			return nil, err
		}
		return zeroCopy(rr, dt), nil
	case arrow.BOOL:
		return transferBool(rr)
	case arrow.INT8, arrow.INT16, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.DATE32, arrow.TIME32, arrow.TIME64:
		return transferInt(rr, dt)
	case arrow.STRING, arrow.BINARY, arrow.FIXED_SIZE_BINARY:
		br, ok := rr.(file.BinaryRecordReader)
		if !ok {
			return nil, fmt.Errorf("column of %s has no binary reader", dt)
		}
		chunks := br.GetBuilderChunks()
		if len(chunks) != 1 {
			for _, c := range chunks {
				c.Release()
			}
			return nil, fmt.Errorf("a batch of %s values came in %d chunks, want 1", dt, len(chunks))
		}
		// The reader's builder makes *array.Binary whatever the type; an
		// array made from its data has the right Go type for dt.
		a := array.MakeFromData(chunks[0].Data())
		chunks[0].Release()
		return a, nil
	}
	return nil, fmt.Errorf("reading columns of type %s is not supported", dt)
}

// checkValues checks the reader holds ValuesWritten values of width bytes.
func checkValues(rr file.RecordReader, width int) error {
	if n := rr.ValuesWritten(); n < 0 || len(rr.Values()) < n*width {
		return fmt.Errorf("%d values in a buffer of %d bytes", n, len(rr.Values()))
	}
	return nil
}

// takeValidity hands over the reader's validity bitmap, or nil when the
// batch has no nulls.
func takeValidity(rr file.RecordReader) *memory.Buffer {
	bits := rr.ReleaseValidBits()
	if bits != nil && rr.NullCount() == 0 {
		bits.Release()
		return nil
	}
	return bits
}

func newLeafArray(rr file.RecordReader, dt arrow.DataType, values *memory.Buffer) arrow.Array {
	bits := takeValidity(rr)
	if bits != nil {
		defer bits.Release()
	}
	defer values.Release()
	data := array.NewData(dt, rr.ValuesWritten(), []*memory.Buffer{bits, values}, nil, int(rr.NullCount()), 0)
	defer data.Release()
	return array.MakeFromData(data)
}

func zeroCopy(rr file.RecordReader, dt arrow.DataType) arrow.Array {
	return newLeafArray(rr, dt, rr.ReleaseValues())
}

func transferBool(rr file.RecordReader) (arrow.Array, error) {
	if err := checkValues(rr, 1); err != nil {
		return nil, err
	}
	n := rr.ValuesWritten()
	raw := rr.Values()
	bools := unsafe.Slice((*bool)(unsafe.Pointer(unsafe.SliceData(raw))), n)
	out := make([]byte, bitutil.BytesForBits(int64(n)))
	for i, v := range bools {
		if v {
			bitutil.SetBit(out, i)
		}
	}
	return newLeafArray(rr, arrow.FixedWidthTypes.Boolean, memory.NewBufferBytes(out)), nil
}

// transferInt narrows or reinterprets the reader's int32 or int64 values as
// dt's type.
func transferInt(rr file.RecordReader, dt arrow.DataType) (arrow.Array, error) {
	n := rr.ValuesWritten()
	width := dt.(arrow.FixedWidthDataType).Bytes()
	out := make([]byte, n*width)
	var src []int64
	switch rr.Type() {
	case parquet.Types.Int32:
		if err := checkValues(rr, 4); err != nil {
			return nil, err
		}
		src = make([]int64, n)
		for i, v := range arrow.Int32Traits.CastFromBytes(rr.Values())[:n] {
			if dt.ID() == arrow.UINT32 || dt.ID() == arrow.UINT64 {
				src[i] = int64(uint32(v))
			} else {
				src[i] = int64(v)
			}
		}
	case parquet.Types.Int64:
		if err := checkValues(rr, 8); err != nil {
			return nil, err
		}
		src = arrow.Int64Traits.CastFromBytes(rr.Values())[:n]
	default:
		return nil, fmt.Errorf("%s column read as %s", rr.Type(), dt)
	}
	for i, v := range src {
		switch width {
		case 1:
			out[i] = byte(v)
		case 2:
			out[2*i], out[2*i+1] = byte(v), byte(v>>8)
		case 4:
			arrow.Uint32Traits.CastFromBytes(out)[i] = uint32(v)
		case 8:
			arrow.Uint64Traits.CastFromBytes(out)[i] = uint64(v)
		}
	}
	return newLeafArray(rr, dt, memory.NewBufferBytes(out)), nil
}

// transferInt96 converts Impala's INT96 timestamps to nanoseconds.
func transferInt96(rr file.RecordReader, dt arrow.DataType) arrow.Array {
	n := rr.ValuesWritten()
	vals := parquet.Int96Traits.CastFromBytes(rr.Values())
	if len(vals) < n {
		n = len(vals)
	}
	out := make([]byte, 8*rr.ValuesWritten())
	ns := arrow.Int64Traits.CastFromBytes(out)
	for i, v := range vals[:n] {
		if v[8] != 0 || v[9] != 0 || v[10] != 0 || v[11] != 0 {
			ns[i] = v.ToTime().UnixNano()
		}
	}
	return newLeafArray(rr, dt, memory.NewBufferBytes(out))
}
