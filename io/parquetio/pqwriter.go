package parquetio

import (
	"fmt"
	"io"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/file"
)

// pqFileWriter writes Arrow record batches to a Parquet file, one row group
// per batch, through Arrow's low-level Parquet writer (parquet/file), with
// our own shredding (shred.go). It is what fileWriter encodes row groups
// with.
type pqFileWriter struct {
	wr     *file.Writer
	schema *arrow.Schema
	props  *parquet.WriterProperties
	rgw    file.SerialRowGroupWriter
	lv     levels // scratch, reused for every leaf
	closed bool
}

func newPQFileWriter(sc *arrow.Schema, w io.Writer, props *parquet.WriterProperties) (*pqFileWriter, error) {
	root, err := toParquetSchema(sc, props)
	if err != nil {
		return nil, err
	}
	meta := fileMetadata(sc, props.Allocator())
	wr := file.NewParquetWriter(w, root, file.WithWriterProps(props), file.WithWriteMetadata(meta))
	return &pqFileWriter{wr: wr, schema: sc, props: props}, nil
}

// NumRows reports how many rows the finished row groups hold.
func (fw *pqFileWriter) NumRows() int { return fw.wr.NumRows() }

// Write writes rec as one row group, or as several if it has more rows than
// the writer properties allow in one.
func (fw *pqFileWriter) Write(rec arrow.Record) error {
	if !rec.Schema().Equal(fw.schema) {
		return fmt.Errorf("record schema does not match the file's:\nrecord: %s\nfile: %s", rec.Schema(), fw.schema)
	}
	maxRows := fw.props.MaxRowGroupLength()
	if rec.NumRows() <= maxRows {
		return fw.writeRowGroup(rec)
	}
	for off := int64(0); off < rec.NumRows(); off += maxRows {
		part := rec.NewSlice(off, min(off+maxRows, rec.NumRows()))
		err := fw.writeRowGroup(part)
		part.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func (fw *pqFileWriter) writeRowGroup(rec arrow.Record) error {
	if fw.rgw != nil {
		if err := fw.rgw.Close(); err != nil {
			return err
		}
	}
	fw.rgw = fw.wr.AppendRowGroup()
	rows := int(rec.NumRows())
	for c, f := range fw.schema.Fields() {
		leaves, err := leafPaths(rec.Column(c), f.Nullable)
		if err != nil {
			return fmt.Errorf("column %q: %w", f.Name, err)
		}
		for i := range leaves {
			cw, err := fw.rgw.NextColumn()
			if err != nil {
				return err
			}
			if err := writeLeaf(cw, &leaves[i], rows, &fw.lv, fw.props.Allocator()); err != nil {
				return fmt.Errorf("column %s: %w", cw.Descr().Path(), err)
			}
		}
	}
	return nil
}

// Close finishes the last row group and writes the footer.
func (fw *pqFileWriter) Close() error {
	if fw.closed {
		return nil
	}
	fw.closed = true
	if fw.rgw != nil {
		if err := fw.rgw.Close(); err != nil {
			return err
		}
	}
	return fw.wr.Close()
}
