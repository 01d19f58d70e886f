package arrowipc

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v17/arrow/ipc"

	"github.com/ac3/ac3/io/atomicfile"
	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/pipeline/conv"
)

// Batch limits: a batch is cut at whichever comes first. The byte limit
// keeps a run of very long conversations from holding thousands of others
// in memory.
const (
	batchRows  = 4096
	batchBytes = 64 << 20
)

var errClosed = errors.New("writer is closed")

// Writer streams conversations to an Arrow IPC file of the canonical schema.
// The same conversations give a byte-identical file. A Writer is not safe
// for concurrent use.
type Writer struct {
	fw   *ipc.FileWriter
	buf  *bufio.Writer
	b    *parquetio.ConversationBuilder
	file *atomicfile.File // set by Create
	err  error
	done bool
}

// NewWriter starts an Arrow IPC file on w. Close finishes the file but does
// not close w.
func NewWriter(w io.Writer) (*Writer, error) {
	return newWriter(w, nil)
}

// Create starts an Arrow IPC file at path. The data goes to a temporary file
// in the same directory that Close renames to path and Abort removes, so
// path never holds a partial file.
func Create(path string) (*Writer, error) {
	af, err := atomicfile.Create(path)
	if err != nil {
		return nil, err
	}
	w, err := newWriter(af, af)
	if err != nil {
		_ = af.Abort()
		return nil, err
	}
	return w, nil
}

func newWriter(w io.Writer, af *atomicfile.File) (*Writer, error) {
	buf := bufio.NewWriterSize(w, 1<<20)
	fw, err := ipc.NewFileWriter(&tellWriter{w: buf}, ipc.WithSchema(parquetio.Schema()))
	if err != nil {
		return nil, fmt.Errorf("starting arrow file: %w", err)
	}
	return &Writer{fw: fw, buf: buf, b: parquetio.NewConversationBuilder(nil), file: af}, nil
}

// Write adds c to the file. It may write a batch, and so block on the
// output. After an error the Writer is unusable: Close reports the error
// and, for a file from Create, removes it.
func (w *Writer) Write(c *conv.Conversation) error {
	if w.done {
		return errClosed
	}
	if w.err != nil {
		return w.err
	}
	w.b.Append(c)
	if w.b.Len() >= batchRows || w.b.Bytes() >= batchBytes {
		return w.flush()
	}
	return nil
}

func (w *Writer) flush() error {
	if w.b.Len() == 0 {
		return nil
	}
	rec := w.b.NewRecord()
	defer rec.Release()
	if err := w.fw.Write(rec); err != nil {
		w.err = fmt.Errorf("writing arrow batch: %w", err)
	}
	return w.err
}

// Close writes any buffered rows and the file footer, then (for Create)
// renames the file into place. It returns the first error of the Writer's
// life.
func (w *Writer) Close() error {
	if w.done {
		return errClosed
	}
	w.done = true
	defer w.b.Release()
	err := w.err
	if err == nil {
		err = w.flush()
	}
	if err == nil {
		if cerr := w.fw.Close(); cerr != nil {
			err = fmt.Errorf("writing arrow footer: %w", cerr)
		}
	}
	if err == nil {
		if ferr := w.buf.Flush(); ferr != nil {
			err = fmt.Errorf("flushing arrow output: %w", ferr)
		}
	}
	if w.file == nil {
		return err
	}
	if err != nil {
		return errors.Join(err, w.file.Abort())
	}
	return w.file.Commit()
}

// Abort gives up on the file: for Create it removes the temporary file; on a
// caller's writer it stops writing, leaving an unfinished file there. Abort
// after Close does nothing.
func (w *Writer) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	w.b.Release()
	if w.file != nil {
		return w.file.Abort()
	}
	return nil
}

// tellWriter gives ipc.FileWriter the io.WriteSeeker it asks for. It only
// ever asks where it is (Seek(0, io.SeekCurrent)) to record block offsets,
// so counting bytes is enough, and any io.Writer can take an IPC file.
type tellWriter struct {
	w   io.Writer
	pos int64
}

func (t *tellWriter) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	t.pos += int64(n)
	return n, err
}

func (t *tellWriter) Seek(offset int64, whence int) (int64, error) {
	if offset != 0 || whence != io.SeekCurrent {
		return 0, fmt.Errorf("seeking to %d (whence %d): output is not seekable", offset, whence)
	}
	return t.pos, nil
}
