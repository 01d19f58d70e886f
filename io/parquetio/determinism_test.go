package parquetio_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/parquet/file"

	"github.com/ac3/ac3/io/parquetio"
)

// TestNoDictionaryFallback writes a string column whose distinct values
// outgrow Arrow's default dictionary page limit (1 MB) within one row
// group. Had the chunk fallen back to plain pages, Arrow Go would list its
// two data-page encodings in the footer in map order and two writes of the
// same rows could differ (a sharded run's merged exports did, by a few
// bytes): every chunk must keep one data-page encoding.
func TestNoDictionaryFallback(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "note", Type: arrow.BinaryTypes.String},
	}, nil)
	write := func() []byte {
		var buf bytes.Buffer
		w, err := parquetio.NewTableWriter(&buf, sc, parquetio.WriterOptions{RowGroupRows: 5000})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4000 {
			note := fmt.Sprintf("%0400d", i) // 4,000 distinct values of 400 bytes: 1.6 MB
			if err := w.Append([]any{fmt.Sprintf("c%d", i%7), note}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	first := write()
	rdr, err := file.NewParquetReader(bytes.NewReader(first))
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	for g := 0; g < rdr.NumRowGroups(); g++ {
		rg := rdr.MetaData().RowGroup(g)
		for c := 0; c < rg.NumColumns(); c++ {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			data := 0
			for _, st := range cc.EncodingStats() {
				// The page type is Arrow's internal thrift enum; its name is public.
				if st.PageType.String() != "DICTIONARY_PAGE" {
					data++
				}
			}
			if data > 1 {
				t.Errorf("row group %d column %s: %d data-page encodings %v; a dictionary fell back to plain", g, cc.PathInSchema(), data, cc.EncodingStats())
			}
		}
	}
	for i := range 3 {
		if !bytes.Equal(first, write()) {
			t.Fatalf("write %d differs from the first", i+2)
		}
	}
}
