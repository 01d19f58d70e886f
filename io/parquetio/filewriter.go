package parquetio

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

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
// pqarrow writer and the output, and cuts a row group from the builder
// whenever the builder reaches a row or byte cap. Errors are sticky: after
// one, the file is not worth finishing.
type fileWriter struct {
	fw   *pqarrow.FileWriter
	buf  *bufio.Writer
	file *atomicFile // set by Create: renamed into place on close
	b    batcher
	opts WriterOptions
	err  error
	done bool
}

func newFileWriter(w io.Writer, file *atomicFile, sc *arrow.Schema, b batcher, opts WriterOptions, longText, plain []string) (*fileWriter, error) {
	opts = opts.withDefaults()
	props, arrowProps, err := opts.writerProps(longText, plain)
	if err != nil {
		return nil, err
	}
	// Parquet writes many small pieces (page headers, short pages); a
	// buffer keeps them from becoming one syscall each on an *os.File.
	buf := bufio.NewWriterSize(w, 1<<20)
	fw, err := pqarrow.NewFileWriter(sc, buf, props, arrowProps)
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

// rowAdded flushes a row group if the builder has reached a cap.
func (f *fileWriter) rowAdded() error {
	if f.b.Len() >= f.opts.RowGroupRows || f.b.Bytes() >= f.opts.RowGroupBytes {
		return f.flush()
	}
	return nil
}

func (f *fileWriter) flush() error {
	if f.b.Len() == 0 {
		return nil
	}
	rec := f.b.NewRecord()
	defer rec.Release()
	if err := f.fw.Write(rec); err != nil {
		f.err = fmt.Errorf("writing row group after row %d: %w", f.fw.NumRows(), err)
		return f.err
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
	err := f.err
	if err == nil {
		err = f.flush()
	}
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
	if f.file == nil {
		return err
	}
	if err != nil {
		return errors.Join(err, f.file.discard())
	}
	return f.file.commit()
}

// abort abandons the output: a file made by Create is removed, a caller's
// writer is left with whatever was already written to it.
func (f *fileWriter) abort() error {
	if f.done {
		return nil
	}
	f.done = true
	f.b.Release()
	if f.file != nil {
		return f.file.discard()
	}
	return nil
}
