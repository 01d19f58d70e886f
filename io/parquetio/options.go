package parquetio

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/compress"
)

// Compression is the codec used for every column of a written file.
type Compression int

// Codecs a writer can use. The zero value is Zstd: it makes files about a
// third smaller than Snappy on chat text for a modest cost in speed.
const (
	Zstd Compression = iota
	Snappy
	Uncompressed
)

func (c Compression) String() string {
	switch c {
	case Zstd:
		return "zstd"
	case Snappy:
		return "snappy"
	case Uncompressed:
		return "none"
	}
	return fmt.Sprintf("Compression(%d)", int(c))
}

// Defaults for WriterOptions.
const (
	DefaultRowGroupRows = 4096
	// DefaultRowGroupBytes bounds the writer's memory: the group being
	// filled plus the one being written (see Writer). Converting WildChat-like
	// text, 16 MB groups peaked at about 265 MB RSS whatever the input
	// length (about 215 MB since the large buffers moved off the Go heap,
	// chunks.go), 32 MB ones at 315–385 MB, growing with the length of the
	// run; at a few thousand rows a group is still plenty for readers to
	// scan.
	DefaultRowGroupBytes = 16 << 20
	// DefaultZstdLevel is zstd's fastest level. On chat text it makes files
	// only a few percent larger than zstd's default level at about half the
	// CPU, and compression was most of the cost of writing.
	DefaultZstdLevel = 1
)

// WriterOptions tune Writer and TableWriter. The zero value is ready to use.
type WriterOptions struct {
	// Compression is the codec for all columns; zstd when zero.
	Compression Compression
	// CompressionLevel is the zstd level, numbered as by the zstd tool
	// (1 fastest … 22 smallest); DefaultZstdLevel when zero or less. The
	// pure-Go encoder has four levels: 1–2, 3–5, 6–9 and 10 and up. Other
	// codecs ignore it.
	CompressionLevel int
	// RowGroupRows caps the rows of one row group; DefaultRowGroupRows when
	// zero or less.
	RowGroupRows int
	// RowGroupBytes caps the approximate uncompressed size of one row group;
	// DefaultRowGroupBytes when zero or less. Whichever cap is reached first
	// ends the group, so one huge conversation cannot make a writer hold
	// thousands of others in memory.
	RowGroupBytes int64
}

// dictionaryPageLimit is far above any row group's bytes (a row is capped
// well below it by the readers' line limit), so no chunk falls back from
// its dictionary; see writerProps.
const dictionaryPageLimit = 1 << 30

// writeBatchValues is how many values Arrow encodes between page size checks.
const writeBatchValues = 64

func (o WriterOptions) withDefaults() WriterOptions {
	if o.RowGroupRows <= 0 {
		o.RowGroupRows = DefaultRowGroupRows
	}
	if o.RowGroupBytes <= 0 {
		o.RowGroupBytes = DefaultRowGroupBytes
	}
	if o.CompressionLevel <= 0 {
		o.CompressionLevel = DefaultZstdLevel
	}
	return o
}

func (o WriterOptions) codec() (compress.Compression, error) {
	switch o.Compression {
	case Zstd:
		return compress.Codecs.Zstd, nil
	case Snappy:
		return compress.Codecs.Snappy, nil
	case Uncompressed:
		return compress.Codecs.Uncompressed, nil
	}
	return 0, fmt.Errorf("unknown compression %v", o.Compression)
}

// writerProps builds the Parquet writer properties. longText names columns
// (Parquet dotted paths) holding long free text: for those, dictionary
// encoding and min/max statistics cost time on every value and never pay
// off (texts rarely repeat, and nobody filters on the lexically smallest
// message), so both are turned off there. plain names columns that only
// lose the dictionary.
func (o WriterOptions) writerProps(longText, plain []string, mem memory.Allocator) (*parquet.WriterProperties, error) {
	codec, err := o.codec()
	if err != nil {
		return nil, err
	}
	props := []parquet.WriterProperty{
		parquet.WithCompression(codec),
		parquet.WithMaxRowGroupLength(int64(o.RowGroupRows)),
		// Arrow checks the page size limit (1 MB) only between batches of
		// this many values. At its default of 1024, a batch of long chat
		// messages made pages of 10 MB and more, and the encoder and zstd
		// buffers grew to match; 64 long texts stay close to the limit.
		parquet.WithBatchSize(writeBatchValues),
		// created_by stays Arrow Go's default, "parquet-go version 17.0.0":
		// it holds no host or time, so output is byte-identical across runs,
		// and other readers parse it to decide which writer bugs to work
		// around, so it should name the real writer.
		//
		// A column chunk whose dictionary outgrows the limit (1 MB by
		// default) falls back to plain pages, and Arrow Go then lists the
		// chunk's two data-page encodings in the footer in map order: the
		// same rows written twice gave files a few bytes apart. A limit no
		// row group can reach keeps every chunk on one encoding, so output
		// stays byte-identical; the dictionary is still bounded by the row
		// group (RowGroupBytes), which a long-text column never builds one
		// for anyway.
		parquet.WithDictionaryPageSizeLimit(dictionaryPageLimit),
	}
	if o.Compression == Zstd {
		props = append(props, parquet.WithCompressionLevel(o.CompressionLevel))
	}
	for _, p := range longText {
		props = append(props,
			parquet.WithDictionaryFor(p, false),
			parquet.WithStatsFor(p, false))
	}
	for _, p := range plain {
		props = append(props, parquet.WithDictionaryFor(p, false))
	}
	if mem != nil {
		props = append(props, parquet.WithAllocator(mem))
	}
	return parquet.NewWriterProperties(props...), nil
}
