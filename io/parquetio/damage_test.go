package parquetio_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/compress"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"github.com/ac3/ac3/io/detect"
	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

// Issue 26: a Parquet input with flipped bytes read as 0 records with no
// error, and ingest marked it done. The oracle for a damaged file is: the
// read fails with an error that names the file, or it returns exactly the
// rows the metadata promises; and for a file ac3 wrote (zstd, whose frames
// carry checksums) those rows equal the intact file's.

// licJSON holds 30 real Lost-in-Conversation records; with the 10 WildChat
// conversations they are the 40 real conversations of the report.
const licJSON = "../../fixtures/lic/sample_5_per_task.json"

// realConversations reads the WildChat and LiC samples as `ac3 convert`
// would.
func realConversations(tb testing.TB) []*conv.Conversation {
	tb.Helper()
	var out []*conv.Conversation
	for _, p := range []string{wildchatJSONL, licJSON} {
		r, _, err := detect.Open(context.Background(), p, detect.Options{})
		if err != nil {
			tb.Fatal(err)
		}
		convs, bad := readAll(tb, r)
		r.Close()
		if len(bad) > 0 {
			tb.Fatalf("%s: %d bad records", p, len(bad))
		}
		out = append(out, convs...)
	}
	if len(out) != 40 {
		tb.Fatalf("%d conversations, want 40", len(out))
	}
	return out
}

// flip64 returns a copy of data with 0xFF XORed into every third byte of
// the 64 at off, the damage of the report.
func flip64(data []byte, off int) []byte {
	cp := append([]byte(nil), data...)
	for i := off; i < off+64 && i < len(cp); i += 3 {
		cp[i] ^= 0xFF
	}
	return cp
}

// readRecords reads every record of the Parquet file at path, stopping at
// the first error.
func readRecords(path string) ([]record.Record, error) {
	return readRecordsUpTo(path, -1)
}

// readRecordsUpTo is readRecords stopping after max records (max < 0: no
// limit) with no error.
func readRecordsUpTo(path string, max int) ([]record.Record, error) {
	r, _, err := parquetio.OpenReader(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []record.Record
	for len(out) != max {
		rec, err := r.Next(ctx)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// metadataRows is the number of rows the footer of the Parquet file at
// path promises, read with Arrow's own metadata reader, not ours.
func metadataRows(path string) (int64, error) {
	var rows int64
	err := parquetio.CatchPanic(func() error {
		pf, err := file.OpenParquetFile(path, false)
		if err != nil {
			return err
		}
		defer pf.Close()
		rows = pf.NumRows()
		return nil
	})
	return rows, err
}

// checkRead applies the oracle to one read of a damaged copy at path; it
// returns what is wrong, or "". With same, a successful read must give
// exactly want.
func checkRead(path string, got []record.Record, err error, want []record.Record, same bool) string {
	if err != nil {
		if !strings.Contains(err.Error(), path) {
			return fmt.Sprintf("an error that does not name the file: %v", err)
		}
		return ""
	}
	rows, merr := metadataRows(path)
	switch {
	case merr != nil:
		return fmt.Sprintf("read %d records with no error, but the metadata does not read: %v", len(got), merr)
	case int64(len(got)) != rows:
		return fmt.Sprintf("read %d records with no error where the metadata promises %d", len(got), rows)
	case same && !reflect.DeepEqual(got, want):
		return fmt.Sprintf("read %d records with no error that differ from the intact file's", len(got))
	}
	return ""
}

// TestFlippedBytesScan damages a file at seeded places, one place at a
// time, and reads each copy: every read must pass the oracle above. The
// places are random but fixed (a seeded generator), so a failure repeats.
func TestFlippedBytesScan(t *testing.T) {
	convs := realConversations(t)
	wc, err := os.ReadFile(filepath.Join(fixtureDir, "wildchat-sample5.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		data   []byte
		same   bool // content is checksummed: a clean read must equal the intact one
		places int
	}{
		// What `ac3 convert --out x.parquet` writes: one row group, zstd.
		{"40 real conversations", writeConversations(t, convs, parquetio.WriterOptions{}), true, 150},
		{"40 real conversations in row groups of 7", writeConversations(t, convs, parquetio.WriterOptions{RowGroupRows: 7}), true, 100},
		// WildChat as Hugging Face publishes it: snappy, which has no
		// checksum, so only the row counts can be held to.
		{"wildchat-sample5.parquet", wc, false, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			places := tc.places
			if testing.Short() {
				places /= 4
			}
			dir := t.TempDir()
			intact := filepath.Join(dir, "intact.parquet")
			if err := os.WriteFile(intact, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			want, err := readRecords(intact)
			if err != nil || len(want) == 0 {
				t.Fatalf("the intact file: %d records, %v", len(want), err)
			}
			rng := rand.New(rand.NewPCG(26, uint64(len(tc.data))))
			var failed, errs, identical int
			for range places {
				off := rng.IntN(len(tc.data))
				path := filepath.Join(dir, fmt.Sprintf("flipped-at-%d.parquet", off))
				if err := os.WriteFile(path, flip64(tc.data, off), 0o644); err != nil {
					t.Fatal(err)
				}
				got, err := readRecords(path)
				if msg := checkRead(path, got, err, want, tc.same); msg != "" {
					failed++
					t.Errorf("64 bytes flipped at byte %d of %d: %s", off, len(tc.data), msg)
				}
				if err != nil {
					errs++
				} else if reflect.DeepEqual(got, want) {
					identical++
				}
				os.Remove(path)
			}
			t.Logf("%d places in %d bytes: %d errors, %d reads identical to the intact file's, %d failing the oracle",
				places, len(tc.data), errs, identical, failed)
		})
	}
}

// chunk is where a column chunk of a Parquet file ends.
type chunk struct {
	rg      int
	path    string // the column's
	end     int64  // offset of its last byte
	dictEnd int64  // offset of the last byte of its dictionary page; -1 without one
}

// chunkEnds returns where every column chunk of the Parquet file at path
// ends, by Arrow's reading of its footer. With zstd the last byte of a
// chunk is in the checksum of its last page.
func chunkEnds(tb testing.TB, path string) []chunk {
	tb.Helper()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		tb.Fatal(err)
	}
	defer pf.Close()
	var out []chunk
	md := pf.MetaData()
	for rg := range len(md.RowGroups) {
		g := md.RowGroup(rg)
		for c := range g.NumColumns() {
			cc, err := g.ColumnChunk(c)
			if err != nil {
				tb.Fatal(err)
			}
			start := cc.DataPageOffset()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < start {
				start = cc.DictionaryPageOffset()
			}
			ch := chunk{rg: rg, path: md.Schema.Column(c).Path(), end: start + cc.TotalCompressedSize() - 1, dictEnd: -1}
			if start < cc.DataPageOffset() {
				// The dictionary page comes first, the data pages right after.
				ch.dictEnd = cc.DataPageOffset() - 1
			}
			out = append(out, ch)
		}
	}
	return out
}

// TestPagesThatDoNotDecode damages the last page of column chunks so that
// it no longer decompresses, leaving every page header intact. Arrow's
// record reader takes such a page as the end of its column without an
// error; before issue 26, a file with every column's page damaged read as
// 0 records and no error, and one with a long column's last page damaged
// read short. Each must be an error naming the file, the row group and a
// column.
func TestPagesThatDoNotDecode(t *testing.T) {
	convs := realConversations(t)
	long := &conv.Conversation{ID: "long", Messages: []conv.Message{{Role: conv.User, Content: "q"}}}
	rng := rand.New(rand.NewPCG(26, 1))
	for i := range 1500 {
		// 1.5 MB of text: more than one 1 MiB page.
		text := make([]byte, 1024)
		for j := range text {
			text[j] = 'a' + byte(rng.IntN(26))
		}
		long.Messages = append(long.Messages, conv.Message{Role: conv.Assistant, Content: fmt.Sprintf("answer %d: %s", i, text)})
	}
	all := func(chunk) bool { return true }
	column := func(path string) func(chunk) bool { return func(c chunk) bool { return c.path == path } }
	tests := []struct {
		name       string
		convs      []*conv.Conversation
		opts       parquetio.WriterOptions
		damage     func(chunk) bool // the chunks whose last page to damage
		dictionary bool             // damage their dictionary page instead
	}{
		{"every column of one row group", convs[:3], parquetio.WriterOptions{}, all, false},
		{"one column", convs[:3], parquetio.WriterOptions{}, column("meta"), false},
		{"a message field", convs[:3], parquetio.WriterOptions{}, column("messages.list.element.content"), false},
		{"every column of the second row group", convs[:9], parquetio.WriterOptions{RowGroupRows: 4}, func(c chunk) bool { return c.rg == 1 }, false},
		{"every column of the last row group", convs[:9], parquetio.WriterOptions{RowGroupRows: 4}, func(c chunk) bool { return c.rg == 2 }, false},
		// The last row's messages span pages: without its last page the
		// row ends early, and Arrow counts it whole.
		{"the last page of a long conversation's texts", append(convs[:2:2], long), parquetio.WriterOptions{}, column("messages.list.element.content"), false},
		{"the dictionary page of every column that has one", convs[:3], parquetio.WriterOptions{}, all, true},
		{"the dictionary page of the roles", convs[:3], parquetio.WriterOptions{}, column("messages.list.element.role"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := writeConversations(t, tt.convs, tt.opts)
			path := writeTemp(t, "damaged.parquet", data)
			damaged := 0
			for _, c := range chunkEnds(t, path) {
				if !tt.damage(c) {
					continue
				}
				at := c.end
				if tt.dictionary {
					if at = c.dictEnd; at < 0 {
						continue
					}
				}
				data[at] ^= 0xFF
				damaged++
			}
			if damaged == 0 {
				t.Fatal("nothing to damage")
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := readRecords(path)
			if err == nil {
				t.Fatalf("read %d of %d records with no error", len(got), len(tt.convs))
			}
			t.Log(err)
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "row group ") || !strings.Contains(msg, "column ") {
				t.Errorf("the error does not name the file, row group and column: %v", msg)
			}
		})
	}
}

// TestListRowCutShort damages the last of the several pages that hold the
// roles of a long conversation's messages, its texts intact. Arrow counts
// the last row whole when its pages end inside it, and the texts' column is
// longer than the struct needs (which Arrow allows), so neither the row
// count nor the lengths show it: the conversation would read with its last
// messages missing. Only the roles column's values against its metadata
// does, at the end of the row group.
func TestListRowCutShort(t *testing.T) {
	long := &conv.Conversation{ID: "long"}
	for i := range 3000 {
		role := conv.User
		if i%2 == 1 {
			role = conv.Assistant
		}
		long.Messages = append(long.Messages, conv.Message{Role: role, Content: fmt.Sprint(i)})
	}
	b := parquetio.NewConversationBuilder(memory.DefaultAllocator)
	defer b.Release()
	b.Append(&conv.Conversation{ID: "short", Messages: []conv.Message{{Role: conv.User, Content: "hi"}}})
	b.Append(long)
	rec := b.NewRecord()
	defer rec.Release()
	// Small plain pages, so the roles take several.
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithDictionaryDefault(false), parquet.WithDataPageSize(1024), parquet.WithBatchSize(64))
	fw, err := pqarrow.NewFileWriter(rec.Schema(), &buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	path := writeTemp(t, "long.parquet", data)
	if got, err := readRecords(path); err != nil || len(got) != 2 || len(got[1].Conv.Messages) != 3000 {
		t.Fatalf("intact: %d records, %v", len(got), err)
	}
	for _, c := range chunkEnds(t, path) {
		if c.path == "messages.list.element.role" {
			data[c.end] ^= 0xFF
		}
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readRecords(path)
	if err == nil {
		n := 0
		if len(got) == 2 && got[1].Conv != nil {
			n = len(got[1].Conv.Messages)
		}
		t.Fatalf("read %d records with no error, the long one with %d of its 3000 messages", len(got), n)
	}
	if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "row group 0") || !strings.Contains(msg, "messages.list.element.role") {
		t.Errorf("the error does not name the file, row group and column: %v", msg)
	}
	t.Log(err)
}

// TestWildChatPagesThatDoNotDecode is TestPagesThatDoNotDecode for a file
// of WildChat's schema (read by the WildChat decoder, with nested
// moderation columns), written with zstd so damage shows.
func TestWildChatPagesThatDoNotDecode(t *testing.T) {
	data := buildWildChatParquetWith(t, readWildChatLines(t, wildchatFixtureRows), compress.Codecs.Zstd)
	path := writeTemp(t, "wildchat.parquet", data)
	if got, err := readRecords(path); err != nil || len(got) != wildchatFixtureRows {
		t.Fatalf("intact: %d records, %v", len(got), err)
	}
	chunks := chunkEnds(t, path)
	tests := []struct {
		name string
		at   func(chunk) int64 // the byte to damage; -1 for none
	}{
		{"the last page of every column", func(c chunk) int64 { return c.end }},
		{"the dictionary page of every column", func(c chunk) int64 { return c.dictEnd }},
		{"the texts", func(c chunk) int64 {
			if c.path == "conversation.list.element.content" {
				return c.end
			}
			return -1
		}},
		{"a moderation score", func(c chunk) int64 {
			if strings.HasPrefix(c.path, "openai_moderation.list.element.category_scores.") {
				return c.end
			}
			return -1
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			damaged := append([]byte(nil), data...)
			n := 0
			for _, c := range chunks {
				if at := tt.at(c); at >= 0 {
					damaged[at] ^= 0xFF
					n++
				}
			}
			if n == 0 {
				t.Fatal("nothing to damage")
			}
			path := writeTemp(t, "damaged.parquet", damaged)
			got, err := readRecords(path)
			if err == nil {
				t.Fatalf("read %d of %d records with no error", len(got), wildchatFixtureRows)
			}
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "row group 0") || !strings.Contains(msg, "column ") {
				t.Errorf("the error does not name the file, row group and column: %v", msg)
			}
		})
	}
}
