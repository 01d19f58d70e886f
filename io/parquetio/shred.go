package parquetio

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/sourcegraph/conc/pool"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/file"
)

// An Arrow record batch becomes a Parquet row group here: pqFileWriter
// writes the row groups and the footer, shredding turns each column into
// its leaves' levels and values, and writeLeaf hands those to Arrow's
// column writers, which encode and compress the pages.

// pqFileWriter writes Arrow record batches to a Parquet file, one row group
// per batch, through Arrow's low-level Parquet writer (parquet/file), with
// the shredding below. It is what fileWriter (writer.go) encodes row groups
// with.
type pqFileWriter struct {
	wr     *file.Writer
	schema *arrow.Schema
	props  *parquet.WriterProperties
	rgw    file.BufferedRowGroupWriter
	lv     sync.Pool // *levels, scratch reused across leaves and row groups
	closed bool
}

func newPQFileWriter(sc *arrow.Schema, w io.Writer, props *parquet.WriterProperties) (*pqFileWriter, error) {
	root, err := toParquetSchema(sc, props)
	if err != nil {
		return nil, err
	}
	meta := fileMetadata(sc, props.Allocator())
	wr := file.NewParquetWriter(w, root, file.WithWriterProps(props), file.WithWriteMetadata(meta))
	return &pqFileWriter{wr: wr, schema: sc, props: props}, nil
}

// NumRows reports how many rows the finished row groups hold.
func (fw *pqFileWriter) NumRows() int { return fw.wr.NumRows() }

// Write writes rec as one row group, or as several if it has more rows than
// the writer properties allow in one.
func (fw *pqFileWriter) Write(rec arrow.Record) error {
	if !rec.Schema().Equal(fw.schema) {
		return fmt.Errorf("record schema does not match the file's:\nrecord: %s\nfile: %s", rec.Schema(), fw.schema)
	}
	maxRows := fw.props.MaxRowGroupLength()
	if rec.NumRows() <= maxRows {
		return fw.writeRowGroup(rec)
	}
	for off := int64(0); off < rec.NumRows(); off += maxRows {
		part := rec.NewSlice(off, min(off+maxRows, rec.NumRows()))
		err := fw.writeRowGroup(part)
		part.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// writeRowGroup encodes rec's leaf columns side by side, each into its own
// buffer (a buffered row group), and the row group's Close then writes them
// in column order: the bytes are those of writing them one after another,
// and encoding and compressing, most of a conversion's CPU time, use every
// core instead of one.
func (fw *pqFileWriter) writeRowGroup(rec arrow.Record) error {
	if fw.rgw != nil {
		if err := fw.rgw.Close(); err != nil {
			return err
		}
	}
	fw.rgw = fw.wr.AppendBufferedRowGroup()
	rows := int(rec.NumRows())
	var leaves []leafPath
	for c, f := range fw.schema.Fields() {
		ls, err := leafPaths(rec.Column(c), f.Nullable)
		if err != nil {
			return fmt.Errorf("column %q: %w", f.Name, err)
		}
		leaves = append(leaves, ls...)
	}
	errs := make([]error, len(leaves))
	encoders := pool.New().WithMaxGoroutines(runtime.GOMAXPROCS(0))
	for i := range leaves {
		encoders.Go(func() {
			cw, err := fw.rgw.Column(i)
			if err != nil {
				errs[i] = err
				return
			}
			lv, _ := fw.lv.Get().(*levels)
			if lv == nil {
				lv = &levels{}
			}
			defer fw.lv.Put(lv)
			if err := writeLeaf(cw, &leaves[i], rows, lv, fw.props.Allocator()); err != nil {
				errs[i] = fmt.Errorf("column %s: %w", cw.Descr().Path(), err)
			}
		})
	}
	encoders.Wait()
	for _, err := range errs {
		if err != nil {
			return err // the first in column order, as a serial write would stop at
		}
	}
	return nil
}

// Close finishes the last row group and writes the footer.
func (fw *pqFileWriter) Close() error {
	if fw.closed {
		return nil
	}
	fw.closed = true
	if fw.rgw != nil {
		if err := fw.rgw.Close(); err != nil {
			return err
		}
	}
	return fw.wr.Close()
}

// Record shredding: an Arrow column becomes one Parquet column per leaf,
// each a run of (repetition level, definition level) pairs plus the leaf's
// values, as in the Dremel paper.
//
// Walking from the top-level value down to a leaf, the definition level
// counts the optional and repeated nodes that are present (a null or an
// empty list stops the walk and is written at the level reached); the
// repetition level says at which list the value continues the previous one
// (0: a new row). For messages, list<element: struct<role, content>>, a
// row with two messages gives role levels (0,2) (1,2), an empty list (0,0),
// and a null element (r,1).
//
// Values are handed to the column writer "spaced", as Arrow lays them out:
// the leaf array's slots under the innermost list, nulls included, which
// the writer matches against the definition levels. Which of Arrow's
// column writer calls is used (dense or spaced, with or without a
// validity buffer) follows pqarrow's rules exactly, because the choice
// changes how values are batched into pages and so the bytes of the file.

// shredStep is one nested level on the way from a top-level column to a
// leaf: a list or a struct, nullable or not.
type shredStep struct {
	arr      arrow.Array
	nullable bool
	list     array.ListLike // nil for a struct
	rep      int16          // repetition level of the list's elements
	last     bool           // the innermost list on the path
}

// leafPath is the path to one leaf column of a record's top-level column.
type leafPath struct {
	steps    []shredStep
	leaf     arrow.Array
	nullable bool // the leaf's field is nullable
	maxDef   int16
	maxRep   int16
}

// leafPaths lists the leaves of arr, a top-level column whose field is
// nullable or not, in schema order (the order of Parquet's columns).
func leafPaths(arr arrow.Array, nullable bool) ([]leafPath, error) {
	var out []leafPath
	err := collectLeaves(arr, nullable, nil, 0, 0, &out)
	return out, err
}

func collectLeaves(arr arrow.Array, nullable bool, steps []shredStep, def, rep int16, out *[]leafPath) error {
	if nullable {
		def++
	}
	switch a := arr.(type) {
	case *array.List:
		def++
		rep++
		// A fresh copy of the steps, in which this list is the innermost
		// so far (a deeper list takes the mark in its own copy).
		steps = append(steps[:len(steps):len(steps)], shredStep{arr: arr, nullable: nullable, list: a, rep: rep, last: true})
		for i := range steps[:len(steps)-1] {
			steps[i].last = false
		}
		// List elements are always optional in the file (fieldNode).
		return collectLeaves(a.ListValues(), true, steps, def, rep, out)
	case *array.Struct:
		steps = append(steps[:len(steps):len(steps)], shredStep{arr: arr, nullable: nullable})
		// Children share these steps; any that goes on to a list copies
		// them before changing one.
		st := a.DataType().(*arrow.StructType)
		for i, f := range st.Fields() {
			if err := collectLeaves(a.Field(i), f.Nullable, steps, def, rep, out); err != nil {
				return err
			}
		}
		return nil
	case *array.Boolean, *array.Int32, *array.Int64, *array.Float32, *array.Float64, *array.String, *array.Binary:
		*out = append(*out, leafPath{steps: steps, leaf: arr, nullable: nullable, maxDef: def, maxRep: rep})
		return nil
	}
	return fmt.Errorf("arrays of type %s cannot be written", arr.DataType())
}

// levels is a leaf's shredded form for one record batch, reused from batch
// to batch.
type levels struct {
	def, rep []int16
	// lo, hi bound the leaf slots visited below the innermost list; ok
	// says whether any was.
	lo, hi int64
	ok     bool
	err    error
}

var errGappedList = errors.New("a null list with elements cannot be written")

// shred computes the levels of p for rows [0, rows) of its column.
func (p *leafPath) shred(rows int, lv *levels) {
	lv.def, lv.rep, lv.ok, lv.err = lv.def[:0], lv.rep[:0], false, nil
	for i := range rows {
		p.visit(0, i, 0, 0, lv)
	}
}

func (p *leafPath) emit(lv *levels, rep, def int16) {
	if p.maxDef > 0 {
		lv.def = append(lv.def, def)
	}
	if p.maxRep > 0 {
		lv.rep = append(lv.rep, rep)
	}
}

func (p *leafPath) visit(k, i int, rep, def int16, lv *levels) {
	if k == len(p.steps) {
		if p.nullable {
			if p.leaf.IsNull(i) {
				p.emit(lv, rep, def)
				return
			}
			def++
		}
		p.emit(lv, rep, def)
		return
	}
	s := &p.steps[k]
	if s.nullable {
		if s.arr.IsNull(i) {
			p.emit(lv, rep, def)
			return
		}
		def++
	}
	if s.list == nil {
		p.visit(k+1, i, rep, def, lv)
		return
	}
	start, end := s.list.ValueOffsets(i)
	if start == end {
		p.emit(lv, rep, def)
		return
	}
	if s.last {
		switch {
		case !lv.ok:
			lv.lo, lv.hi, lv.ok = start, end, true
		case start == lv.hi:
			lv.hi = end
		default:
			// Arrow lets a null list own elements; the slots would then
			// not line up with the levels. Our builders never make one.
			lv.err = errGappedList
		}
	}
	def++
	for j := start; j < end; j++ {
		r := rep
		if j > start {
			r = s.rep
		}
		p.visit(k+1, int(j), r, def, lv)
	}
}

// valueRange returns the slots of the leaf array that the levels cover.
func (p *leafPath) valueRange(lv *levels) (int64, int64) {
	if !hasList(p.steps) {
		return 0, int64(p.leaf.Len())
	}
	if !lv.ok {
		return 0, 0
	}
	return lv.lo, lv.hi
}

func hasList(steps []shredStep) bool {
	for _, s := range steps {
		if s.list != nil {
			return true
		}
	}
	return false
}

// noNulls says whether a has no nulls, without counting them when Arrow has
// not (pqarrow's lazyNoNulls).
func noNulls(a arrow.Array) bool {
	n := a.Data().NullN()
	return n == 0 || (n == array.UnknownNullCount && a.NullBitmapBytes() == nil)
}

// writeLeaf writes the leaf p of a batch of rows to cw.
func writeLeaf(cw file.ColumnChunkWriter, p *leafPath, rows int, lv *levels, mem memory.Allocator) error {
	p.shred(rows, lv)
	if lv.err != nil {
		return lv.err
	}
	lo, hi := p.valueRange(lv)
	vals := array.NewSlice(p.leaf, lo, hi)
	defer vals.Release()

	var b batch
	if p.maxDef > 0 {
		b.def = lv.def
	}
	if p.maxRep > 0 {
		b.rep = lv.rep
	}
	// pqarrow's choice between WriteBatch and WriteBatchSpaced.
	info := cw.LevelInfo()
	leafNullable := p.nullable && !noNulls(p.leaf)
	singleNullable := info.DefLevel == info.RepeatedAncestorDefLevel+1 && leafNullable
	parentNulls := info.HasNullableValues() && !singleNullable
	if parentNulls && !cw.HasBitsBuffer() {
		buf := memory.NewResizableBuffer(mem)
		buf.Resize(int(bitutil.BytesForBits(cw.Properties().WriteBatchSize())))
		cw.SetBitsBuffer(buf)
	}
	b.dense = !parentNulls && (cw.Descr().SchemaNode().RepetitionType() == parquet.Repetitions.Required || vals.NullN() == 0)
	b.valid, b.validOff = vals.NullBitmapBytes(), int64(vals.Data().Offset())

	switch wr := cw.(type) {
	case *file.BooleanColumnChunkWriter:
		a, ok := vals.(*array.Boolean)
		if !ok {
			return typeMismatch(cw, vals)
		}
		var data []bool
		if a.Len() > 0 {
			data = make([]bool, a.Len())
			for i := range data {
				data[i] = a.Value(i)
			}
		}
		b.dense = b.dense || data == nil
		return writeBatch(wr, data, b)
	case *file.Int32ColumnChunkWriter:
		return writeValues(wr, cw, vals, (*array.Int32).Int32Values, b)
	case *file.Int64ColumnChunkWriter:
		return writeValues(wr, cw, vals, (*array.Int64).Int64Values, b)
	case *file.Float32ColumnChunkWriter:
		return writeValues(wr, cw, vals, (*array.Float32).Float32Values, b)
	case *file.Float64ColumnChunkWriter:
		return writeValues(wr, cw, vals, (*array.Float64).Float64Values, b)
	case *file.ByteArrayColumnChunkWriter:
		var offsets []int32
		switch a := vals.(type) {
		case *array.String:
			offsets = a.ValueOffsets()
		case *array.Binary:
			offsets = a.ValueOffsets()
		default:
			return typeMismatch(cw, vals)
		}
		var buf []byte
		if vb := vals.Data().Buffers()[2]; vb != nil {
			buf = vb.Bytes()
		}
		data := make([]parquet.ByteArray, vals.Len())
		for i := range data {
			data[i] = parquet.ByteArray(buf[offsets[i]:offsets[i+1]])
		}
		return writeBatch(wr, data, b)
	}
	return typeMismatch(cw, vals)
}

// batch is a leaf's levels, and how its values go with them: dense (only
// the values present) or spaced (a slot for every value, nulls included,
// matched against the validity bits), as pqarrow chooses.
type batch struct {
	def, rep []int16
	valid    []byte
	validOff int64
	dense    bool
}

// batchWriter is the pair of calls each of Arrow's typed column writers has.
type batchWriter[T any] interface {
	WriteBatch(values []T, defLevels, repLevels []int16) (int64, error)
	WriteBatchSpaced(values []T, defLevels, repLevels []int16, validBits []byte, validBitsOffset int64)
}

// writeValues writes vals, a leaf of fixed-width numbers, whose values
// Arrow already holds as the slice the column writer takes.
func writeValues[T any, A arrow.Array](wr batchWriter[T], cw file.ColumnChunkWriter, vals arrow.Array, values func(A) []T, b batch) error {
	a, ok := vals.(A)
	if !ok {
		return typeMismatch(cw, vals)
	}
	return writeBatch(wr, values(a), b)
}

// writeBatch hands data to wr with b's levels, dense or spaced.
func writeBatch[T any](wr batchWriter[T], data []T, b batch) error {
	if b.dense {
		_, err := wr.WriteBatch(data, b.def, b.rep)
		return err
	}
	wr.WriteBatchSpaced(data, b.def, b.rep, b.valid, b.validOff)
	return nil
}

func typeMismatch(cw file.ColumnChunkWriter, a arrow.Array) error {
	return fmt.Errorf("column %s is %s in the file but %s in the batch", cw.Descr().Path(), cw.Type(), a.DataType())
}
