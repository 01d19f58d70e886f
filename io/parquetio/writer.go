package parquetio

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/ac3/ac3/io/atomicfile"
	"github.com/ac3/ac3/pipeline/conv"
)

// The Parquet writers: Writer for conversations and TableWriter for rows of
// other schemas. Both fill a row builder (convbuilder.go, tablebuilder.go)
// and hand it to a fileWriter, below, which cuts the rows into row groups
// and writes those in the background; shred.go encodes one row group into
// Parquet column chunks.

// Writer streams conversations to a Parquet file of the canonical schema.
//
// Rows are buffered in Arrow builders and written out as a row group once
// WriterOptions.RowGroupRows rows or RowGroupBytes bytes have built up. A
// row group is encoded, compressed and written on a background goroutine
// while the next one fills, so memory use is bounded by two row groups
// whatever the file size. The same conversations written with the same
// options give a byte-identical file.
//
// A Writer is not safe for concurrent use.
type Writer struct {
	fw  *fileWriter
	b   *ConversationBuilder
	mem *chunkAllocator // the builder's large buffers; nil: the Go heap
}

// NewWriter starts a Parquet file on w. Close finishes the file but does not
// close w.
func NewWriter(w io.Writer, opts WriterOptions) (*Writer, error) {
	return newWriter(w, nil, opts)
}

// Create starts a Parquet file at path. The data goes to a temporary file in
// the same directory, which Close renames to path once the file is complete
// and Abort removes, so path never holds a partial file.
func Create(path string, opts WriterOptions) (*Writer, error) {
	af, err := atomicfile.Create(path)
	if err != nil {
		return nil, err
	}
	w, err := newWriter(af, af, opts)
	if err != nil {
		_ = af.Abort()
		return nil, err
	}
	return w, nil
}

// longTextColumns lists the canonical schema's free-text columns, as Parquet
// paths (see WriterOptions.writerProps).
func longTextColumns() []string {
	return []string{ColID, ColSystem, ColMeta, ColMessages + ".list.element." + FieldContent}
}

// plainColumns lists columns whose values are mostly distinct, so that a
// dictionary would only cost time (Arrow's dictionary encoder also boxes
// every value it looks up, one allocation per row).
func plainColumns() []string {
	return []string{ColSourceLine, ColSourceRow}
}

func newWriter(w io.Writer, af *atomicfile.File, opts WriterOptions) (*Writer, error) {
	return newWriterMem(w, af, opts, newChunkAllocator())
}

// newWriterMem is newWriter with the builder's and the encoders' large
// buffers from mem; nil keeps them on the Go heap.
func newWriterMem(w io.Writer, af *atomicfile.File, opts WriterOptions, mem *chunkAllocator) (*Writer, error) {
	var alloc memory.Allocator // nil: the Go heap
	if mem != nil {
		alloc = mem
	}
	b := NewConversationBuilder(alloc)
	fw, err := newFileWriter(w, af, Schema(), b, opts, longTextColumns(), plainColumns(), alloc)
	if err != nil {
		b.Release()
		mem.close()
		return nil, err
	}
	return &Writer{fw: fw, b: b, mem: mem}, nil
}

// Write adds c to the file. When it completes a row group it may wait for
// the previous one to be written, and so block on the output. After an
// error the Writer is unusable: Close reports the error and, for a file
// from Create, removes it.
func (w *Writer) Write(c *conv.Conversation) error {
	if err := w.fw.check(); err != nil {
		return err
	}
	w.b.Append(c)
	return w.fw.rowAdded()
}

// Close writes any buffered rows and the file footer, then (for Create)
// renames the file into place. It returns the first error of the Writer's
// life; calling it twice is an error.
func (w *Writer) Close() error {
	err := w.fw.close()
	w.mem.close() // after the builder and the last row group released theirs
	return err
}

// Abort gives up on the file: for Create it removes the temporary file; on a
// caller's writer it stops writing, leaving an unfinished file there. Abort
// after Close does nothing.
func (w *Writer) Abort() error {
	err := w.fw.abort()
	w.mem.close()
	return err
}

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
	fw *fileWriter
	tb *tableBuilder
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
	tb, longText, err := newTableBuilder(sc)
	if err != nil {
		return nil, err
	}
	fw, err := newFileWriter(w, af, sc, tb, opts, longText, nil, nil)
	if err != nil {
		tb.Release()
		return nil, err
	}
	return &TableWriter{fw: fw, tb: tb}, nil
}

// Append adds one row, a value per column in schema order. It checks every
// value before storing any, so a row with a wrong type is refused whole and
// the writer stays usable. Append may write a row group, and so block on
// the output.
func (t *TableWriter) Append(row []any) error {
	if err := t.fw.check(); err != nil {
		return err
	}
	if err := t.tb.Append(row); err != nil {
		return err
	}
	return t.fw.rowAdded()
}

// Close writes any buffered rows and the footer, then (for CreateTable)
// renames the file into place. It returns the first error of the writer's
// life.
func (t *TableWriter) Close() error { return t.fw.close() }

// Abort gives up on the file, as Writer.Abort does.
func (t *TableWriter) Abort() error { return t.fw.abort() }

// errClosed is returned by writes after Close or Abort.
var errClosed = errors.New("writer is closed")

// batcher is what fileWriter needs from a row builder.
type batcher interface {
	Len() int
	Bytes() int64
	NewRecord() arrow.Record
	Release()
}

// fileWriter is the part shared by Writer and TableWriter: it owns the
// Parquet writer and the output, and cuts a row group from the builder
// whenever the builder reaches a row or byte cap.
//
// A cut row group is encoded, compressed and written on a goroutine of its
// own while the caller fills the builder with the next one, so on two cores
// building and compressing overlap. At most one row group is in flight: the
// next cut waits for it, so memory holds at most two row groups (the one
// being written and the one being filled), and row groups reach the file in
// order, so the bytes are the same as writing them one after the other.
//
// Errors are sticky: after one, the file is not worth finishing. An error
// writing a row group in the background is reported by the next call that
// waits for it (the next cut, Close).
type fileWriter struct {
	fw   *pqFileWriter
	buf  *bufio.Writer
	file *atomicfile.File // set by Create: renamed into place on close
	b    batcher
	opts WriterOptions
	err  error
	done bool
	// pending delivers the outcome of the row group being written in the
	// background; nil when none is. Only its goroutine touches fw and buf
	// until the outcome has been received.
	pending chan error
}

func newFileWriter(w io.Writer, file *atomicfile.File, sc *arrow.Schema, b batcher, opts WriterOptions, longText, plain []string, mem memory.Allocator) (*fileWriter, error) {
	opts = opts.withDefaults()
	props, err := opts.writerProps(longText, plain, mem)
	if err != nil {
		return nil, err
	}

	// Parquet writes many small pieces (page headers, short pages); a
	// buffer keeps them from becoming one syscall each on an *os.File.
	buf := bufio.NewWriterSize(w, 1<<20)
	fw, err := newPQFileWriter(sc, buf, props)
	if err != nil {
		return nil, fmt.Errorf("starting parquet file: %w", err)
	}
	return &fileWriter{fw: fw, buf: buf, file: file, b: b, opts: opts}, nil
}

// check reports whether another row may be added.
func (f *fileWriter) check() error {
	if f.done {
		return errClosed
	}
	return f.err
}

// rowAdded cuts a row group if the builder has reached a cap.
func (f *fileWriter) rowAdded() error {
	if f.b.Len() >= f.opts.RowGroupRows || f.b.Bytes() >= f.opts.RowGroupBytes {
		return f.flush(true)
	}
	return nil
}

// flush cuts the buffered rows into a row group and writes it, in the
// background when async is set.
func (f *fileWriter) flush(async bool) error {
	if f.b.Len() == 0 {
		return f.wait()
	}
	// Wait before cutting: the builder then allocates the next batch only
	// once the previous row group's buffers are garbage.
	if err := f.wait(); err != nil {
		return err
	}
	rec := f.b.NewRecord()
	if !async {
		defer rec.Release()
		f.err = f.write(rec)
		return f.err
	}
	done := make(chan error, 1)
	f.pending = done
	go func() {
		err := f.write(rec)
		// Released before the outcome is sent: the next cut waits for
		// it, so these buffers are garbage before the builder asks for
		// the next batch's.
		rec.Release()
		if err == nil && f.file != nil {
			startWriteback(f.file.File)
		}
		done <- err
	}()
	return nil
}

// wait waits for the row group in flight, if any, and returns the sticky
// error.
func (f *fileWriter) wait() error {
	if f.pending != nil {
		if err := <-f.pending; err != nil && f.err == nil {
			f.err = err
		}
		f.pending = nil
	}
	return f.err
}

// write writes rec as one row group. Arrow panics on some internal
// failures; on the background goroutine no caller could recover that, so
// it becomes an error like any other.
func (f *fileWriter) write(rec arrow.Record) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("writing row group after row %d: panic: %v", f.fw.NumRows(), p)
		}
	}()
	if err := f.fw.Write(rec); err != nil {
		return fmt.Errorf("writing row group after row %d: %w", f.fw.NumRows(), err)
	}
	return nil
}

// close writes the last row group and the footer and, for a file made by
// Create, moves it into place. After an earlier error it abandons the file
// instead and returns that error.
func (f *fileWriter) close() error {
	if f.done {
		return errClosed
	}
	f.done = true
	defer f.b.Release()
	err := f.flush(false)
	if err == nil {
		if cerr := f.fw.Close(); cerr != nil {
			err = fmt.Errorf("writing parquet footer: %w", cerr)
		}
	}
	if err == nil {
		if ferr := f.buf.Flush(); ferr != nil {
			err = fmt.Errorf("flushing parquet output: %w", ferr)
		}
	}
	if err != nil {
		f.discard()
	}
	if f.file == nil {
		return err
	}
	if err != nil {
		return errors.Join(err, f.file.Abort())
	}
	return f.file.Commit()
}

// discard finishes the Parquet writer into nothing, for a file that will not
// be completed: Arrow then releases the buffers of the row group it still
// holds, which a Writer's chunk allocator could otherwise never reuse or
// return. Nothing more reaches the output (what is already there stays),
// and any failure is moot.
func (f *fileWriter) discard() {
	defer func() { _ = recover() }()
	f.buf.Reset(io.Discard)
	_ = f.fw.Close()
}

// abort abandons the output: a file made by Create is removed, a caller's
// writer is left with whatever was already written to it.
func (f *fileWriter) abort() error {
	if f.done {
		return nil
	}
	f.done = true
	// The row group in flight writes to the output: let it finish before
	// the file goes away. Its error no longer matters.
	_ = f.wait()
	f.b.Release()
	f.discard()
	if f.file != nil {
		return f.file.Abort()
	}
	return nil
}
