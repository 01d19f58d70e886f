package parquetio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/file"

	"github.com/ac3/ac3/pipeline/record"
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
// Only the columns the format's decoder uses are read (see projection).
// The reader decodes readBatchRows rows at a time, reading pages as it
// goes, so memory stays bounded by one batch and one page per column
// whatever the file and row group sizes. A corrupt row group is an error
// from Next that names the file and the row group.
func OpenReader(path string) (record.Reader, string, error) {
	src, full, err := openParquet(path)
	if err != nil {
		return nil, "", err
	}
	dec, format, err := chooseDecoder(path, full)
	if err != nil {
		src.Close()
		return nil, "", err
	}
	src.project(projectionFor(format))
	return &batchReader{name: path, src: src, dec: dec}, format, nil
}

// openParquet opens path and maps its schema; it returns the source, with
// every column selected, and the file's whole Arrow schema.
func openParquet(path string) (*parquetSource, *arrow.Schema, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("opening %s: %w", path, err)
	}
	src := &parquetSource{f: f}
	err = CatchPanic(func() error {
		st, err := f.Stat()
		if err != nil {
			return err
		}
		// Every buffer is sized from lengths the file declares; the
		// limited allocator turns an absurd one into a panic that
		// CatchPanic reports, instead of a fatal out-of-memory error.
		src.size, src.mem = st.Size(), LimitedAllocator(st.Size())
		if src.pf, err = file.NewParquetReader(f, file.WithReadProps(readProps(src.mem))); err != nil {
			return err
		}
		if err := checkMetadata(src.pf); err != nil {
			return err
		}
		if src.nodes, err = readTree(src.pf.MetaData().Schema); err != nil {
			return err
		}
		src.project(projection{})
		return nil
	})
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("opening parquet file %s: %w", path, err)
	}
	return src, src.schema, nil
}

// readProps are the reader properties of OpenReader.
func readProps(mem memory.Allocator) *parquet.ReaderProperties {
	props := parquet.NewReaderProperties(mem)
	// Read column chunks through a small buffer instead of loading each
	// whole chunk: chunks of large row groups can be hundreds of MB, and a
	// corrupt file can claim any size at all.
	props.BufferedStreamEnabled = true
	props.BufferSize = 1 << 20
	return props
}

// projection names what a decoder reads: the top-level columns (nil: all)
// and the fields of the message list's elements.
type projection struct {
	columns  []string
	messages string
}

// messageFields are the fields of a message that decoders read. WildChat's
// messages have a dozen more (country, header, hashed_ip, ...), which
// conversations have no place for.
var messageFields = []string{FieldRole, FieldContent}

func projectionFor(format string) projection {
	if format == FormatWildChat {
		// Every other top-level column goes into Meta.
		return projection{messages: wcConversation}
	}
	return projection{
		columns: []string{ColID, ColSourceFile, ColSourceLine, ColSourceRow, ColFormat, ColSystem,
			ColMessages, ColLanguage, ColToxic, ColRedacted, ColMeta,
			ColLanguageSource, ColLanguageDetector, ColLanguageConfidence},
		messages: ColMessages,
	}
}

// parquetSource reads the projected columns of a Parquet file as Arrow
// record batches, one row group after another (see assemble.go).
type parquetSource struct {
	f      *os.File
	size   int64
	pf     *file.Reader
	mem    memory.Allocator
	nodes  []*readNode // the top-level columns read
	leaves []*readNode // their leaf columns
	schema *arrow.Schema
	next   int          // next row group to open
	open   bool         // row group next-1 is being read
	left   int64        // rows of the open row group not read yet
	cur    arrow.Record // the batch last returned
}

// schemaOf is the Arrow schema of nodes, with the file's key-value
// metadata (ac3.schema among it).
func (s *parquetSource) schemaOf(nodes []*readNode) *arrow.Schema {
	fields := make([]arrow.Field, len(nodes))
	for i, n := range nodes {
		fields[i] = n.field
	}
	var keys, values []string
	kv := s.pf.MetaData().KeyValueMetadata()
	for i, k := range kv.Keys() {
		if k != arrowSchemaKey {
			keys, values = append(keys, k), append(values, kv.Values()[i])
		}
	}
	md := arrow.NewMetadata(keys, values)
	return arrow.NewSchema(fields, &md)
}

// project keeps the columns p names, and only role and content of the
// message list's elements when they have both.
func (s *parquetSource) project(p projection) {
	var kept []*readNode
	for _, n := range s.nodes {
		if p.columns != nil && !slices.Contains(p.columns, n.field.Name) {
			continue
		}
		if n.field.Name == p.messages {
			n.keepElementFields(messageFields)
		}
		kept = append(kept, n)
	}
	s.nodes, s.leaves = kept, nil
	for _, n := range kept {
		s.leaves = n.leaves(s.leaves)
	}
	s.schema = s.schemaOf(kept)
}

// NextBatch returns the next batch of the open row group. A row group ends
// when the rows its metadata counts have been read, not when the pages run
// out: Arrow's record reader ends a column quietly at a page it cannot
// decode, so pages running out early must be an error, or a corrupt file
// would read as a shorter one (issue 26).
func (s *parquetSource) NextBatch() (arrow.Record, error) {
	s.release()
	for {
		if s.open {
			if s.left > 0 {
				rec, err := s.readBatch(min(readBatchRows, s.left))
				if err != nil {
					return nil, fmt.Errorf("row group %d: %w", s.next-1, err)
				}
				s.left -= rec.NumRows()
				s.cur = rec
				return rec, nil
			}
			if err := s.checkRowGroupEnd(); err != nil {
				return nil, fmt.Errorf("row group %d: %w", s.next-1, err)
			}
			s.open = false
		}
		if s.next >= s.pf.NumRowGroups() {
			return nil, io.EOF
		}
		rg := s.next
		s.next++
		if err := s.openRowGroup(rg); err != nil {
			return nil, fmt.Errorf("row group %d failed its integrity check, not read: %w", rg, err)
		}
		s.open = true
	}
}

// openRowGroup checks the page headers of every column (pagewalk.go), read
// or not, so a corrupt file is refused whichever columns a format uses,
// and points the leaves' record readers at row group rg.
func (s *parquetSource) openRowGroup(rg int) error {
	g := s.pf.RowGroup(rg)
	md := s.pf.MetaData()
	s.left = g.NumRows() // checkMetadata made sure it is not negative
	for col := range g.NumColumns() {
		if err := walkPages(s.f, s.size, md, g, col); err != nil {
			return fmt.Errorf("column %s: %w", md.Schema.Column(col).Path(), err)
		}
	}
	for _, leaf := range s.leaves {
		path := md.Schema.Column(leaf.col).Path()
		pr, err := g.GetColumnPageReader(leaf.col)
		if err != nil {
			return fmt.Errorf("column %s: %w", path, err)
		}
		if leaf.rr == nil {
			leaf.rr = file.NewRecordReader(md.Schema.Column(leaf.col), leaf.info, leaf.field.Type, s.mem, s.pf.BufferPool())
		}
		leaf.pages = &pageReader{PageReader: pr}
		leaf.rr.SetPageReader(leaf.pages)
		leaf.values = 0
	}
	return nil
}

// pageReader remembers why a column chunk's pages ended. Arrow's column
// reader takes a page reader's error as the end of the chunk and returns
// none; the row counts show the chunk ended early, this says why.
type pageReader struct {
	file.PageReader
	err error
}

func (p *pageReader) Next() bool {
	if p.PageReader.Next() {
		return true
	}
	p.err = p.PageReader.Err()
	return false
}

// checkRowGroupEnd checks, once the rows the metadata counts have been
// read, that every column took exactly the values (levels) its chunk's
// metadata counts. Fewer means the last rows' values stopped early (Arrow
// counts a list column's last row whole when a page under it does not
// decode) or pages holding rows the metadata does not count; more means
// pages holding more values than it says.
func (s *parquetSource) checkRowGroupEnd() error {
	g := s.pf.MetaData().RowGroup(s.next - 1)
	for _, leaf := range s.leaves {
		cc, err := g.ColumnChunk(leaf.col)
		if err != nil {
			return err
		}
		if leaf.values != cc.NumValues() {
			why := ""
			if leaf.pages.err != nil {
				why = ": " + leaf.pages.err.Error()
			}
			return fmt.Errorf("column %s: its %d rows hold %d values where the metadata counts %d%s",
				s.pf.MetaData().Schema.Column(leaf.col).Path(), g.NumRows(), leaf.values, cc.NumValues(), why)
		}
	}
	return nil
}

// readBatch reads the next rows rows (at least one) of the open row group.
// Every leaf column must yield exactly that many, and every column's array
// have that length.
func (s *parquetSource) readBatch(rows int64) (arrow.Record, error) {
	cols := make([]arrow.Array, 0, len(s.nodes))
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	md := s.pf.MetaData()
	for _, n := range s.nodes {
		if err := n.loadBatch(rows, md.Schema); err != nil {
			var short *shortPages
			if errors.As(err, &short) {
				total := s.pf.RowGroup(s.next - 1).NumRows()
				return nil, fmt.Errorf("column %s: its pages end after %d of the %d rows the metadata counts: %s",
					short.column, total-s.left+short.read, total, short.cause)
			}
			return nil, err
		}
		a, err := n.build(rows, s.mem)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", n.field.Name, err)
		}
		cols = append(cols, a)
		if int64(a.Len()) != rows {
			return nil, fmt.Errorf("column %s: its levels make %d rows of the %d read", n.field.Name, a.Len(), rows)
		}
	}
	return array.NewRecord(s.schema, cols, rows), nil
}

func (s *parquetSource) release() {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
}

func (s *parquetSource) Close() error {
	s.release()
	for _, leaf := range s.leaves {
		if leaf.rr != nil {
			leaf.rr.Release()
			leaf.rr = nil
		}
	}
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

// checkMetadata decodes every column chunk's metadata once, up front, so
// that a corrupt footer is an error when the file is opened rather than in
// the middle of it. The row counts of the row groups must add up to the
// file's: they are what the reader holds the pages to.
func checkMetadata(pf *file.Reader) error {
	md := pf.MetaData()
	var rows int64
	for rg := 0; rg < len(md.RowGroups); rg++ {
		g := md.RowGroup(rg)
		if g.NumRows() < 0 || g.NumRows() > math.MaxInt64-rows {
			return fmt.Errorf("row group %d has %d rows", rg, g.NumRows())
		}
		rows += g.NumRows()
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
			// A row is one value of a flat column and at least one of a
			// repeated one.
			if flat := md.Schema.Column(c).MaxRepetitionLevel() == 0; flat && cc.NumValues() != g.NumRows() ||
				!flat && cc.NumValues() < g.NumRows() {
				return fmt.Errorf("row group %d column %s: %d values for %d rows", rg, md.Schema.Column(c).Path(), cc.NumValues(), g.NumRows())
			}
		}
	}
	if rows != md.NumRows {
		return fmt.Errorf("the file's metadata counts %d rows, its row groups %d", md.NumRows, rows)
	}
	return nil
}
