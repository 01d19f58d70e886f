package parquetio

import (
	"io"

	"github.com/ac3/ac3/io/atomicfile"
	"github.com/ac3/ac3/pipeline/conv"
)

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
	fw *fileWriter
	b  *ConversationBuilder
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
	b := NewConversationBuilder(nil)
	fw, err := newFileWriter(w, af, Schema(), b, opts, longTextColumns(), plainColumns())
	if err != nil {
		b.Release()
		return nil, err
	}
	return &Writer{fw: fw, b: b}, nil
}

// Write adds c to the file. When it completes a row group it may wait for
// the previous one to be written, and so block on the output. After an error the Writer is unusable: Close reports the error
// and, for a file from Create, removes it.
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
func (w *Writer) Close() error { return w.fw.close() }

// Abort gives up on the file: for Create it removes the temporary file; on a
// caller's writer it stops writing, leaving an unfinished file there. Abort
// after Close does nothing.
func (w *Writer) Abort() error { return w.fw.abort() }
