package parquetio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/compress"
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
	ours, err := (WriterOptions{}).withDefaults().writerProps([]string{"messages.list.element.content", "id"}, []string{"i64"})
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
