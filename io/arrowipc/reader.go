package arrowipc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/ipc"

	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/pipeline/record"
)

// fileMagic opens (and closes) every Arrow IPC file; a stream starts with a
// message length instead.
const fileMagic = "ARROW1"

// OpenReader opens an Arrow IPC file or stream for streaming, one record
// batch at a time. The rows must have the canonical schema or WildChat's
// columns (see parquetio.OpenReader); other schemas are refused with an
// error that lists the columns.
//
// Arrow's IPC decoders panic on some corrupt input; OpenReader and the
// reader's Next recover those panics and return a *parquetio.MalformedError.
func OpenReader(path string) (record.Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	var head [6]byte
	n, err := io.ReadFull(f, head[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if n == 0 {
		f.Close()
		return nil, fmt.Errorf("reading %s: file is empty", path)
	}
	isFile := string(head[:n]) == fileMagic
	var src ipcSource
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	err = parquetio.CatchPanic(func() error {
		mem := parquetio.LimitedAllocator(st.Size())
		if isFile {
			if err := checkFile(f, st.Size()); err != nil {
				return err
			}
			fr, err := ipc.NewFileReader(f, ipc.WithAllocator(mem))
			if err != nil {
				return err
			}
			src = &fileSource{fr: fr, f: f}
			return nil
		}
		if err := checkStream(f, st.Size()); err != nil {
			return err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		sr, err := ipc.NewReader(bufio.NewReaderSize(f, 1<<20), ipc.WithAllocator(mem))
		if err != nil {
			return err
		}
		src = &streamSource{sr: sr, f: f}
		return nil
	})
	if err != nil {
		f.Close()
		kind := "stream"
		if isFile {
			kind = "file"
		}
		return nil, fmt.Errorf("opening arrow %s %s: %w", kind, path, err)
	}
	r, _, err := parquetio.NewBatchReader(path, src.schema(), src)
	if err != nil {
		src.Close()
		return nil, err
	}
	return r, nil
}

type ipcSource interface {
	parquetio.BatchSource
	schema() *arrow.Schema
}

// fileSource reads the batches of an IPC file in order.
type fileSource struct {
	fr *ipc.FileReader
	f  *os.File
	n  int // batches read
}

func (s *fileSource) schema() *arrow.Schema { return s.fr.Schema() }

func (s *fileSource) NextBatch() (arrow.Record, error) { return nextBatch(&s.n, s.fr.Read) }

func (s *fileSource) Close() error {
	err := s.fr.Close()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// streamSource reads the batches of an IPC stream in order.
type streamSource struct {
	sr *ipc.Reader
	f  *os.File
	n  int // batches read
}

func (s *streamSource) schema() *arrow.Schema { return s.sr.Schema() }

func (s *streamSource) NextBatch() (arrow.Record, error) {
	return nextBatch(&s.n, func() (arrow.Record, error) {
		if s.sr.Next() {
			return s.sr.Record(), nil
		}
		// The stream reader reports a clean end as no error; anything
		// else, even a wrapped io.EOF, is a truncated or corrupt stream.
		if err := s.sr.Err(); err != nil {
			return nil, err
		}
		return nil, io.EOF
	})
}

func (s *streamSource) Close() error {
	s.sr.Release()
	return s.f.Close()
}

// nextBatch reads batch *n with read and checks it; its errors, Arrow's
// panics among them, name the batch. Only a bare io.EOF is the end.
func nextBatch(n *int, read func() (arrow.Record, error)) (arrow.Record, error) {
	i := *n
	var rec arrow.Record
	err := parquetio.CatchPanic(func() (err error) {
		rec, err = read()
		return err
	})
	if err == io.EOF {
		return nil, io.EOF
	}
	*n++
	if err == nil {
		err = checkBatch(rec)
	}
	if err != nil {
		return nil, fmt.Errorf("record batch %d: %w", i, err)
	}
	return rec, nil
}

// checkBatch checks that every column of a batch has the batch's row count.
// Arrow accepts columns longer than the batch (and reads only the batch's
// rows), but in a file we wrote or any sound one they are equal, so a
// difference means the metadata is corrupt and the count cannot be trusted.
func checkBatch(rec arrow.Record) error {
	for i, c := range rec.Columns() {
		if int64(c.Len()) != rec.NumRows() {
			return fmt.Errorf("column %s has %d rows, the batch %d: %w", rec.ColumnName(i), c.Len(), rec.NumRows(), errCorrupt)
		}
	}
	return nil
}
