package parquetio

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"github.com/ac3/ac3/io/record"
)

// Formats OpenReader and NewBatchReader recognise.
const (
	FormatCanonical = "canonical"
	FormatWildChat  = "wildchat"
)

// readBatchRows is how many rows a reader decodes at a time. WildChat rows
// with their moderation scores run to tens of kilobytes, so this keeps a
// batch in the low tens of megabytes.
const readBatchRows = 512

// MalformedError reports that an Arrow or Parquet decoder panicked on its
// input. Arrow Go trusts the lengths and offsets a file declares and indexes
// with them, so a corrupt or hostile file makes it panic rather than return
// an error. A bad input file is not a bug in ac3, so readers in this package
// and in arrowipc recover such panics and return this error instead; Stack
// keeps the trace for whoever needs to tell a corrupt file from a real bug.
type MalformedError struct {
	Panic any
	Stack []byte
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("malformed input (decoder panicked: %v)", e.Panic)
}

// CatchPanic runs f and turns a panic inside it into a *MalformedError. It
// is for code that hands untrusted bytes to Arrow's decoders (see
// MalformedError); use it around those calls only, not to hide bugs.
func CatchPanic(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &MalformedError{Panic: p, Stack: debug.Stack()}
		}
	}()
	return f()
}

// OpenReader opens a Parquet file for streaming. It recognises the canonical
// schema (by its ac3.schema metadata, or by id and messages columns) and
// WildChat as published on Hugging Face (conversation_hash or
// conversation_id, and conversation), and reports which as "canonical" or
// "wildchat". A file with other columns is refused with an error that lists
// them.
//
// The reader pulls readBatchRows rows at a time through pqarrow's record
// reader, reading pages as it goes, so memory stays bounded by one batch and
// one page per column whatever the file and row group sizes (two of each for
// nested columns, which a checker decodes first; see validate.go). A corrupt
// row group is an error from Next that names the file and the row group.
func OpenReader(path string) (record.Reader, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("opening %s: %w", path, err)
	}
	var (
		src    *parquetSource
		schema *arrow.Schema
	)
	err = CatchPanic(func() error {
		// Not LimitedAllocator: Parquet sizes are 32-bit, so a corrupt one
		// costs at most a 2 GiB allocation that then fails to fill, while
		// a refused allocation panics, which is fatal when it happens in
		// one of pqarrow's struct-reading goroutines. The checker
		// (validate.go) reads with LimitedAllocator instead, so absurd
		// sizes in the nested columns are refused before pqarrow sees them.
		mem := memory.NewGoAllocator()
		pf, err := file.NewParquetReader(f, file.WithReadProps(readProps(mem)))
		if err != nil {
			return err
		}
		if err := checkMetadata(pf); err != nil {
			return err
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: readBatchRows}, mem)
		if err != nil {
			return err
		}
		if schema, err = fr.Schema(); err != nil {
			return err
		}
		// A second reader over the same file and already parsed footer,
		// identical but for its allocator, for the checker.
		st, err := f.Stat()
		if err != nil {
			return err
		}
		limited := LimitedAllocator(st.Size())
		cf, err := file.NewParquetReader(f, file.WithReadProps(readProps(limited)), file.WithMetadata(pf.MetaData()))
		if err != nil {
			return err
		}
		src = &parquetSource{f: f, fr: fr, checker: newRowGroupChecker(f, st.Size(), cf, limited, fr.Manifest)}
		return nil
	})
	if err != nil {
		f.Close()
		return nil, "", fmt.Errorf("opening parquet file %s: %w", path, err)
	}
	r, format, err := NewBatchReader(path, schema, src)
	if err != nil {
		src.Close()
		return nil, "", err
	}
	return r, format, nil
}

// readProps are the reader properties for both of OpenReader's readers:
// they must match so the row group check reads exactly what pqarrow reads.
func readProps(mem memory.Allocator) *parquet.ReaderProperties {
	props := parquet.NewReaderProperties(mem)
	// Read column chunks through a small buffer instead of loading each
	// whole chunk: chunks of large row groups can be hundreds of MB, and a
	// corrupt file can claim any size at all.
	props.BufferedStreamEnabled = true
	props.BufferSize = 1 << 20
	return props
}

// parquetSource adapts pqarrow's record reader to BatchSource. It reads one
// row group at a time, each through its own record reader, with a
// rowGroupCheck one batch ahead of it (see validate.go).
type parquetSource struct {
	f       *os.File
	fr      *pqarrow.FileReader
	checker *rowGroupChecker
	next    int                  // next row group to open
	rr      pqarrow.RecordReader // reader of row group next-1, or nil
	check   *rowGroupCheck       // the checker's position in it
}

func (s *parquetSource) NextBatch() (arrow.Record, error) {
	for {
		if s.rr != nil {
			rg := s.next - 1
			if err := s.check.advance(); err != nil {
				return nil, fmt.Errorf("row group %d failed its integrity check, not read: %w", rg, err)
			}
			if s.rr.Next() {
				return s.rr.Record(), nil
			}
			// pqarrow reports the end of data as a bare io.EOF from Err,
			// or as no error. A wrapped EOF is a truncated page, not the
			// end.
			if err := s.rr.Err(); err != nil && err != io.EOF {
				return nil, fmt.Errorf("row group %d: %w", rg, err)
			}
			s.closeRowGroup()
		}
		if s.next >= s.fr.ParquetReader().NumRowGroups() {
			return nil, io.EOF
		}
		rg := s.next
		s.next++
		// Building the record reader opens the row group's page readers,
		// on pqarrow's goroutines for struct children, so the checker
		// opens them first.
		check, err := s.checker.open(rg)
		if err != nil {
			return nil, fmt.Errorf("row group %d failed its integrity check, not read: %w", rg, err)
		}
		rr, err := s.fr.GetRecordReader(context.Background(), nil, []int{rg})
		if err != nil {
			check.release()
			return nil, fmt.Errorf("row group %d: %w", rg, err)
		}
		s.rr, s.check = rr, check
	}
}

func (s *parquetSource) closeRowGroup() {
	if s.rr != nil {
		s.rr.Release()
		s.check.release()
		s.rr, s.check = nil, nil
	}
}

func (s *parquetSource) Close() error {
	s.closeRowGroup()
	return s.f.Close()
}

// BatchSource is a stream of Arrow record batches, such as a Parquet or
// Arrow IPC file reader.
type BatchSource interface {
	// NextBatch returns the next batch, or io.EOF after the last. The batch
	// belongs to the source and stays valid until the next call or Close.
	NextBatch() (arrow.Record, error)
	Close() error
}

// NewBatchReader decodes the rows of src, whose batches have schema sc, as
// conversations of the canonical or WildChat schema, and reports which (see
// OpenReader). name is the file the batches come from, used in Source and
// in errors. The returned reader closes src when closed; on error src is
// left open.
func NewBatchReader(name string, sc *arrow.Schema, src BatchSource) (record.Reader, string, error) {
	dec, format, err := chooseDecoder(name, sc)
	if err != nil {
		return nil, "", err
	}
	return &batchReader{name: name, src: src, dec: dec}, format, nil
}

// decoder turns the rows of one batch into records.
type decoder interface {
	// bind resolves the columns of a new batch. An error means the batch
	// does not have the schema the file declared.
	bind(rec arrow.Record) error
	// decode returns row i of the bound batch; row is its index in the file.
	decode(i int, row int64) record.Record
}

func chooseDecoder(name string, sc *arrow.Schema) (decoder, string, error) {
	if v, ok := sc.Metadata().GetValue(SchemaKey); ok {
		if v != SchemaVersion {
			return nil, "", fmt.Errorf("reading %s: schema %s=%q, want %q", name, SchemaKey, v, SchemaVersion)
		}
		return &canonicalDecoder{file: name}, FormatCanonical, nil
	}
	has := func(col string) bool { return len(sc.FieldIndices(col)) > 0 }
	switch {
	case has(ColID) && has(ColMessages):
		return &canonicalDecoder{file: name}, FormatCanonical, nil
	case has(wcConversation) && (has(wcHash) || has(wcID)):
		return &wildchatDecoder{file: name}, FormatWildChat, nil
	}
	names := make([]string, sc.NumFields())
	for i, f := range sc.Fields() {
		names[i] = f.Name
	}
	return nil, "", fmt.Errorf("reading %s: columns [%s] match neither the ac3 conversation schema (%s, %s, ...) nor WildChat (%s or %s, %s, ...)",
		name, strings.Join(names, ", "), ColID, ColMessages, wcHash, wcID, wcConversation)
}

// batchReader implements record.Reader over a BatchSource.
type batchReader struct {
	name string
	src  BatchSource
	dec  decoder
	cur  arrow.Record // current batch, owned by src
	i, n int          // next row in cur, rows in cur
	row  int64        // index in the file of the next row
	err  error        // sticky: io.EOF or the error that stopped reading
}

// Next returns the next conversation or quarantined row. It returns io.EOF
// after the last row, ctx's error if ctx is done, and any other error when
// the file cannot be read further (a corrupt page, a batch of the wrong
// shape); those errors are sticky.
func (r *batchReader) Next(ctx context.Context) (record.Record, error) {
	if r.err != nil {
		return record.Record{}, r.err
	}
	if err := ctx.Err(); err != nil {
		return record.Record{}, err
	}
	var out record.Record
	err := CatchPanic(func() error {
		for r.i >= r.n {
			batch, err := r.src.NextBatch()
			if err != nil {
				return err
			}
			if err := r.dec.bind(batch); err != nil {
				return err
			}
			r.cur, r.i, r.n = batch, 0, int(batch.NumRows())
		}
		out = r.dec.decode(r.i, r.row)
		return nil
	})
	if err != nil {
		// Only the bare io.EOF that BatchSource promises at the end means
		// the end; Arrow wraps io.EOF in its errors for truncated input.
		if err != io.EOF {
			err = fmt.Errorf("reading %s at row %d: %w", r.name, r.row, err)
		}
		r.err = err
		return record.Record{}, err
	}
	r.i++
	r.row++
	return out, nil
}

// Close releases the source. Records already returned stay valid: their
// strings are copies, not views of Arrow buffers.
func (r *batchReader) Close() error {
	if r.err == errReaderClosed {
		return nil
	}
	r.err = errReaderClosed
	return r.src.Close()
}

var errReaderClosed = errors.New("reader is closed")

// checkMetadata decodes every column chunk's metadata once, here, on the
// caller's goroutine. pqarrow does the same later on errgroup goroutines,
// where a panic on corrupt metadata would be beyond CatchPanic's reach and
// would end the process.
func checkMetadata(pf *file.Reader) error {
	md := pf.MetaData()
	if v := md.KeyValueMetadata().FindValue("ARROW:schema"); v != nil {
		// pqarrow decodes this with Arrow's IPC reader (see fbcheck.go).
		raw, err := base64.StdEncoding.DecodeString(*v)
		if err != nil {
			// pqarrow tries the raw-URL alphabet too; leave that to it.
			raw, err = base64.RawStdEncoding.DecodeString(*v)
		}
		if err == nil {
			if err := checkStoredArrowSchema(raw); err != nil {
				return err
			}
		}
	}
	for rg := 0; rg < len(md.RowGroups); rg++ {
		g := md.RowGroup(rg)
		if g.NumColumns() != md.Schema.NumColumns() {
			return fmt.Errorf("row group %d has %d columns, the schema %d", rg, g.NumColumns(), md.Schema.NumColumns())
		}
		for c := 0; c < g.NumColumns(); c++ {
			cc, err := g.ColumnChunk(c)
			if err != nil {
				return fmt.Errorf("row group %d column %d: %w", rg, c, err)
			}
			if cc.TotalCompressedSize() < 0 || cc.DataPageOffset() < 0 {
				return fmt.Errorf("row group %d column %d: negative size or offset", rg, c)
			}
		}
	}
	return nil
}
