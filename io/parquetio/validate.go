package parquetio

import (
	"fmt"
	"io"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// Why nested columns are decoded twice.
//
// pqarrow reads the children of a struct column on goroutines it starts
// itself (errgroup in structReader.LoadBatch, and again when it builds the
// readers in FileReader.getReader, which opens each child's page reader).
// Our messages and WildChat's conversation are list<struct<...>>, so nearly
// all the bytes of a file are decoded there. Arrow Go panics on many kinds
// of corrupt page (a dictionary page without its dictionary header, levels
// that run past the page, ...), and a panic on a goroutine we did not start
// cannot be recovered: it ends the process.
//
// So a checker goes one step ahead of pqarrow over the same bytes, on the
// caller's goroutine, under CatchPanic. For every leaf below a top-level
// column it keeps the same decoder pqarrow uses for that leaf
// (file.RecordReader, with the same level info and Arrow type), and before
// each of pqarrow's batches it reads the next batch of readBatchRows
// records exactly as pqarrow's leafReader.LoadBatch will. Decoding is
// deterministic, so what our pass got through without panicking, pqarrow's
// pass gets through too; if ours panics or fails, reading stops with an
// error and pqarrow never sees those pages. Checking batch by batch rather
// than a whole row group up front keeps the work proportional to what the
// caller reads (a corrupt header can claim billions of cheaply encoded
// rows) and memory at one batch.
//
// Top-level primitive columns are not checked: pqarrow reads them on the
// caller's goroutine (ArrowReadProperties.Parallel stays off), where
// batchReader.Next's CatchPanic covers them.
//
// The checker reads through its own file.Reader whose allocator is
// LimitedAllocator, so a page or batch that declares an absurd size is
// refused here, with an error, before pqarrow (which must use a plain
// allocator, as a refused allocation on its goroutines would be fatal)
// tries to allocate it.
//
// What is not covered: pqarrow's transferColumnData, which turns a leaf's
// decoded values into an Arrow array on the same goroutines. It only
// repackages values already decoded, and checks the lengths it relies on.
//
// BenchmarkParquetRead measures the cost.
type rowGroupChecker struct {
	r      io.ReaderAt // the file, for walkPages
	size   int64       // its size
	pf     *file.Reader
	mem    memory.Allocator
	leaves []pqarrow.SchemaField // leaves below a top-level column
}

func newRowGroupChecker(r io.ReaderAt, size int64, pf *file.Reader, mem memory.Allocator, manifest *pqarrow.SchemaManifest) *rowGroupChecker {
	c := &rowGroupChecker{r: r, size: size, pf: pf, mem: mem}
	for _, f := range manifest.Fields {
		// Only struct children are read on pqarrow's goroutines, but
		// lists of primitives are rare in our files and cheap to check,
		// and checking everything below the top keeps the rule simple.
		c.leaves = appendLeaves(c.leaves, f.Children)
	}
	return c
}

func appendLeaves(out []pqarrow.SchemaField, fields []pqarrow.SchemaField) []pqarrow.SchemaField {
	for _, f := range fields {
		// A field without children is a leaf, as pqarrow's getReader
		// decides. IsLeaf is no help: pqarrow leaves ColIndex at 0, not
		// -1, on groups.
		if len(f.Children) == 0 {
			out = append(out, f)
		} else {
			out = appendLeaves(out, f.Children)
		}
	}
	return out
}

// rowGroupCheck is the checker's position in one row group.
type rowGroupCheck struct {
	c       *rowGroupChecker
	readers []file.RecordReader // parallel to c.leaves
}

// open starts checking row group rg: it walks the page headers of every
// column (pagewalk.go), then opens the page reader of each checked column,
// as pqarrow's record reader for rg is about to.
func (c *rowGroupChecker) open(rg int) (*rowGroupCheck, error) {
	k := &rowGroupCheck{c: c}
	var g *file.RowGroupReader
	if err := CatchPanic(func() error { g = c.pf.RowGroup(rg); return nil }); err != nil {
		return nil, err
	}
	for col := range g.NumColumns() {
		err := CatchPanic(func() error { return walkPages(c.r, c.size, c.pf.MetaData(), g, col) })
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.pf.MetaData().Schema.Column(col).Path(), err)
		}
	}
	for _, leaf := range c.leaves {
		var rr file.RecordReader
		err := CatchPanic(func() error {
			pr, err := g.GetColumnPageReader(leaf.ColIndex)
			if err != nil {
				return err
			}
			rr = file.NewRecordReader(c.pf.MetaData().Schema.Column(leaf.ColIndex), leaf.LevelInfo, leaf.Field.Type, c.mem, c.pf.BufferPool())
			rr.SetPageReader(pr)
			return nil
		})
		if err != nil {
			k.release()
			return nil, c.columnError(leaf, err)
		}
		k.readers = append(k.readers, rr)
	}
	return k, nil
}

// advance decodes the next batch of every checked column, as pqarrow's next
// batch will.
func (k *rowGroupCheck) advance() error {
	for i, rr := range k.readers {
		if err := CatchPanic(func() error { return loadBatch(rr) }); err != nil {
			return k.c.columnError(k.c.leaves[i], err)
		}
	}
	return nil
}

// loadBatch is pqarrow's leafReader.LoadBatch for a reader of one row
// group, with the values dropped instead of handed on.
func loadBatch(rr file.RecordReader) error {
	rr.Reset()
	if err := rr.Reserve(readBatchRows); err != nil {
		return err
	}
	for want := int64(readBatchRows); want > 0 && rr.HasMore(); {
		n, err := rr.ReadRecords(want)
		if err != nil {
			return err
		}
		want -= n
		if n == 0 {
			// pqarrow moves to its next row group here; its reader of
			// this one row group has none, so its leaf reader gets nil.
			rr.SetPageReader(nil)
		}
	}
	// Byte-array readers keep values in a builder until they are taken,
	// as pqarrow takes them after each batch. Primitive readers reuse
	// their buffers on Reset.
	if br, ok := rr.(file.BinaryRecordReader); ok {
		for _, a := range br.GetBuilderChunks() {
			a.Release()
		}
	}
	return nil
}

func (k *rowGroupCheck) release() {
	for _, rr := range k.readers {
		rr.Release()
	}
	k.readers = nil
}

func (c *rowGroupChecker) columnError(leaf pqarrow.SchemaField, err error) error {
	return fmt.Errorf("column %s: %w", c.pf.MetaData().Schema.Column(leaf.ColIndex).Path(), err)
}
