package parquetio

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/ac3/ac3/io/atomicfile"
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

func newFileWriter(w io.Writer, file *atomicfile.File, sc *arrow.Schema, b batcher, opts WriterOptions, longText, plain []string) (*fileWriter, error) {
	opts = opts.withDefaults()
	props, err := opts.writerProps(longText, plain)
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
		defer rec.Release()
		done <- f.write(rec)
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
	if f.file == nil {
		return err
	}
	if err != nil {
		return errors.Join(err, f.file.Abort())
	}
	return f.file.Commit()
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
	if f.file != nil {
		return f.file.Abort()
	}
	return nil
}
