package parquetio

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/compress"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// Arrow's pqarrow is no longer part of the binary (see doc.go) but stays
// here, in tests, as the reference: files our writer makes must be byte for
// byte those pqarrow made, and what our reader assembles must equal what
// pqarrow reads.

// compatSchema has every column type the writer supports, nullable and not,
// nested in the ways a file can nest them.
func compatSchema() *arrow.Schema {
	str, i64 := arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64
	inner := arrow.StructOf(
		arrow.Field{Name: "s", Type: str},
		arrow.Field{Name: "ns", Type: str, Nullable: true},
		arrow.Field{Name: "n", Type: i64, Nullable: true},
	)
	md := arrow.NewMetadata([]string{"k"}, []string{"v"})
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: str},
		{Name: "opt_str", Type: str, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "nb", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i64", Type: i64},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64},
		{Name: "messages", Type: MessagesType()},
		{Name: "opt_messages", Type: MessagesType(), Nullable: true},
		{Name: "st", Type: inner, Nullable: true},
		{Name: "ints", Type: arrow.ListOf(i64), Nullable: true},
		{Name: "nested", Type: arrow.ListOf(arrow.ListOf(str)), Nullable: true},
		{Name: "deep", Type: arrow.StructOf(
			arrow.Field{Name: "l", Type: arrow.ListOf(inner), Nullable: true},
			arrow.Field{Name: "x", Type: arrow.FixedWidthTypes.Boolean},
		)},
	}, &md)
}

// randomRecord fills sc with rows rows of random values. nullRate is the
// chance of a null where one is allowed; emptyRate that of an empty list.
func randomRecord(sc *arrow.Schema, rows int, rng *rand.Rand, nullRate, emptyRate float64, longText bool) arrow.Record {
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	for i := range rows {
		for c, f := range sc.Fields() {
			appendRandom(rb.Field(c), f, rng, nullRate, emptyRate, longText, i)
		}
	}
	return rb.NewRecord()
}

func appendRandom(b array.Builder, f arrow.Field, rng *rand.Rand, nullRate, emptyRate float64, longText bool, row int) {
	if f.Nullable && rng.Float64() < nullRate {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.StringBuilder:
		n := rng.IntN(12)
		if longText && rng.IntN(4) == 0 {
			n = rng.IntN(40_000)
		}
		s := make([]byte, n)
		for i := range s {
			s[i] = byte('a' + rng.IntN(6)) // repeats, so dictionaries pay
		}
		b.Append(string(s))
	case *array.BinaryBuilder:
		b.Append([]byte(fmt.Sprint(rng.Uint64())))
	case *array.BooleanBuilder:
		b.Append(rng.IntN(2) == 0)
	case *array.Int32Builder:
		b.Append(rng.Int32N(100) - 50)
	case *array.Int64Builder:
		b.Append(int64(row)*7 - rng.Int64N(3))
	case *array.Float32Builder:
		b.Append(rng.Float32())
	case *array.Float64Builder:
		b.Append(rng.NormFloat64())
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(1_700_000_000_000_000 + rng.Int64N(1e12)))
	case *array.Date32Builder:
		b.Append(arrow.Date32(19_000 + rng.Int32N(1000)))
	case *array.Int8Builder:
		b.Append(int8(rng.IntN(256) - 128))
	case *array.Uint8Builder:
		b.Append(uint8(rng.IntN(256)))
	case *array.Int16Builder:
		b.Append(int16(rng.IntN(1 << 16)))
	case *array.Uint16Builder:
		b.Append(uint16(rng.IntN(1 << 16)))
	case *array.Uint32Builder:
		b.Append(rng.Uint32())
	case *array.Uint64Builder:
		b.Append(rng.Uint64())
	case *array.FixedSizeBinaryBuilder:
		v := make([]byte, f.Type.(*arrow.FixedSizeBinaryType).ByteWidth)
		for i := range v {
			v[i] = byte(rng.IntN(256))
		}
		b.Append(v)
	case *array.MapBuilder:
		if rng.Float64() < emptyRate {
			b.Append(true)
			return
		}
		b.Append(true)
		mt := f.Type.(*arrow.MapType)
		for k := range 1 + rng.IntN(3) {
			b.KeyBuilder().(*array.StringBuilder).Append(fmt.Sprintf("k%d", k))
			appendRandom(b.ItemBuilder(), mt.ItemField(), rng, nullRate, emptyRate, longText, row)
		}
	case *array.ListBuilder:
		elem := f.Type.(*arrow.ListType).ElemField()
		if rng.Float64() < emptyRate {
			b.Append(true)
			return
		}
		b.Append(true)
		for range 1 + rng.IntN(4) {
			appendRandom(b.ValueBuilder(), elem, rng, nullRate, emptyRate, longText, row)
		}
	case *array.StructBuilder:
		b.Append(true)
		st := f.Type.(*arrow.StructType)
		for i, cf := range st.Fields() {
			appendRandom(b.FieldBuilder(i), cf, rng, nullRate, emptyRate, longText, row)
		}
	default:
		panic(fmt.Sprintf("no random values for %T", b))
	}
}

// writeBoth writes recs as one file each with our writer and with pqarrow.
func writeBoth(t *testing.T, sc *arrow.Schema, recs []arrow.Record, props *parquet.WriterProperties) (ours, theirs []byte) {
	t.Helper()
	var a, b bytes.Buffer
	fw, err := newPQFileWriter(sc, &a, props)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := pqarrow.NewFileWriter(sc, &b, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if err := fw.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := pw.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	return a.Bytes(), b.Bytes()
}

// TestWriterMatchesPqarrow writes random batches of every supported shape
// with our shredding and with pqarrow's, under the property sets our
// writers use and a few others, and wants the same bytes.
func TestWriterMatchesPqarrow(t *testing.T) {
	sc := compatSchema()
	ours, err := (WriterOptions{}).withDefaults().writerProps([]string{"messages.list.element.content", "id"}, []string{"i64"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	propSets := map[string]*parquet.WriterProperties{
		"ours":     ours,
		"default":  parquet.NewWriterProperties(),
		"snappy":   parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithBatchSize(7)),
		"v2-pages": parquet.NewWriterProperties(parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithBatchSize(5), parquet.WithDataPageSize(512)),
		"no-dict":  parquet.NewWriterProperties(parquet.WithDictionaryDefault(false), parquet.WithMaxRowGroupLength(37)),
	}
	for _, tc := range []struct {
		name                string
		rows                int
		nullRate, emptyRate float64
		long                bool
	}{
		{"no-nulls", 50, 0, 0, false},
		{"some-nulls", 200, 0.2, 0.2, false},
		{"all-nulls", 30, 1, 0, false},
		{"all-empty", 30, 0, 1, false},
		{"long-text", 20, 0.1, 0.1, true},
	} {
		for pname, props := range propSets {
			t.Run(tc.name+"/"+pname, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(tc.rows), 42))
				var recs []arrow.Record
				for range 3 {
					recs = append(recs, randomRecord(sc, tc.rows, rng, tc.nullRate, tc.emptyRate, tc.long))
				}
				defer func() {
					for _, r := range recs {
						r.Release()
					}
				}()
				a, b := writeBoth(t, sc, recs, props)
				sameFile(t, a, b)
			})
		}
	}
}

// sameFile fails unless a and b are the same Parquet file. Arrow's
// metadata builder lists a column chunk's page encoding counts in map
// order, so where a chunk has pages of two encodings (a dictionary that
// fell back to plain) that list, and only that, may come out in either
// order from either writer. So the data must match byte for byte and the
// footer must too, or at least hold the same bytes in another order.
func sameFile(t *testing.T, a, b []byte) {
	t.Helper()
	if bytes.Equal(a, b) {
		return
	}
	if len(a) != len(b) || len(a) < 8 {
		t.Fatalf("our file has %d bytes, pqarrow's %d", len(a), len(b))
	}
	footer := int(binary.LittleEndian.Uint32(a[len(a)-8:])) + 8
	if footer > len(a) {
		t.Fatalf("footer length %d past the file's %d bytes", footer, len(a))
	}
	data := len(a) - footer
	if !bytes.Equal(a[:data], b[:data]) {
		first := 0
		for a[first] == b[first] {
			first++
		}
		t.Fatalf("our file differs from pqarrow's at byte %d, before the footer at %d", first, data)
	}
	fa, fb := slices.Clone(a[data:]), slices.Clone(b[data:])
	slices.Sort(fa)
	slices.Sort(fb)
	if !bytes.Equal(fa, fb) {
		t.Fatal("our file's footer differs from pqarrow's")
	}
}

// thirdPartySchema adds to compatSchema types that only other writers
// produce: timestamps, narrow and unsigned integers, dates, fixed-size
// binary and maps.
func thirdPartySchema() *arrow.Schema {
	fields := compatSchema().Fields()
	fields = append(fields,
		arrow.Field{Name: "ts_us", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
		arrow.Field{Name: "ts_ms", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
		arrow.Field{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		arrow.Field{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		arrow.Field{Name: "u8", Type: arrow.PrimitiveTypes.Uint8},
		arrow.Field{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		arrow.Field{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
		arrow.Field{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
		arrow.Field{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		arrow.Field{Name: "fsb", Type: &arrow.FixedSizeBinaryType{ByteWidth: 5}, Nullable: true},
		arrow.Field{Name: "scores", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64), Nullable: true},
		arrow.Field{Name: "moderation", Type: arrow.ListOf(arrow.StructOf(
			arrow.Field{Name: "flags", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.FixedWidthTypes.Boolean), Nullable: true},
			arrow.Field{Name: "at", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
		)), Nullable: true},
	)
	return arrow.NewSchema(fields, nil)
}

// jsonRows renders every row of a batch source as JSON, as Meta renders
// WildChat's columns.
func jsonRows(t *testing.T, next func() (arrow.Record, error)) []string {
	t.Helper()
	var rows []string
	for {
		rec, err := next()
		if errors.Is(err, io.EOF) {
			return rows
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range int(rec.NumRows()) {
			var b []byte
			for c := range int(rec.NumCols()) {
				b = appendJSONString(b, rec.ColumnName(c))
				b = append(b, ':')
				b = appendJSONValue(b, rec.Column(c), i)
				b = append(b, ' ')
			}
			rows = append(rows, string(b))
		}
	}
}

// readBoth reads every column of the file at path with our reader and with
// pqarrow, row by row as JSON.
func readBoth(t *testing.T, path string) (ours, theirs []string) {
	t.Helper()
	src, _, err := openParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ours = jsonRows(t, src.NextBatch)

	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 100}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	theirs = jsonRows(t, func() (arrow.Record, error) {
		if rr.Next() {
			return rr.Record(), nil
		}
		if err := rr.Err(); err != nil && err != io.EOF {
			return nil, err
		}
		return nil, io.EOF
	})
	return ours, theirs
}

// TestReaderMatchesPqarrow reads files written by pqarrow, with and without
// the stored Arrow schema, and the committed fixtures, with our assembly and
// with pqarrow's, and wants the same values.
func TestReaderMatchesPqarrow(t *testing.T) {
	sc := thirdPartySchema()
	for _, tc := range []struct {
		name                string
		rows                int
		nullRate, emptyRate float64
		store               bool
		props               *parquet.WriterProperties
	}{
		{"no-nulls", 300, 0, 0, true, parquet.NewWriterProperties()},
		{"some-nulls", 700, 0.25, 0.25, true, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(300))},
		{"some-nulls-no-arrow-schema", 700, 0.25, 0.25, false, parquet.NewWriterProperties(parquet.WithDataPageSize(1024))},
		{"all-nulls", 50, 1, 0, true, parquet.NewWriterProperties()},
		{"all-empty", 50, 0, 1, false, parquet.NewWriterProperties(parquet.WithDataPageVersion(parquet.DataPageV2))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.rows), 7))
			rec := randomRecord(sc, tc.rows, rng, tc.nullRate, tc.emptyRate, false)
			defer rec.Release()
			var buf bytes.Buffer
			var aprops []pqarrow.WriterOption
			if tc.store {
				aprops = append(aprops, pqarrow.WithStoreSchema())
			}
			fw, err := pqarrow.NewFileWriter(sc, &buf, tc.props, pqarrow.NewArrowWriterProperties(aprops...))
			if err != nil {
				t.Fatal(err)
			}
			if err := fw.Write(rec); err != nil {
				t.Fatal(err)
			}
			if err := fw.Close(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "f.parquet")
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			ours, theirs := readBoth(t, path)
			sameRows(t, ours, theirs)
		})
	}
	for _, name := range []string{"canonical.parquet", "wildchat-sample5.parquet", "wildchat-bad.parquet"} {
		t.Run(name, func(t *testing.T) {
			ours, theirs := readBoth(t, filepath.Join("../../fixtures/columnar", name))
			sameRows(t, ours, theirs)
		})
	}
}

func sameRows(t *testing.T, ours, theirs []string) {
	t.Helper()
	if len(ours) != len(theirs) {
		t.Fatalf("we read %d rows, pqarrow %d", len(ours), len(theirs))
	}
	for i := range ours {
		if ours[i] != theirs[i] {
			t.Fatalf("row %d differs:\n ours   %.1500s\n theirs %.1500s", i, ours[i], theirs[i])
		}
	}
}
