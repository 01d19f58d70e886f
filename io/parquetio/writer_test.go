package parquetio_test

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/parquet/file"

	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/pipeline/conv"
)

// manyConversations is n distinct synthetic conversations, enough to make
// several row groups under a small cap.
func manyConversations(n int) []*conv.Conversation {
	convs := make([]*conv.Conversation, n)
	for i := range convs {
		c := syntheticConversation(i)
		c.Messages[1].Content = fmt.Sprintf("%d %s", i*7919, c.Messages[1].Content)
		convs[i] = c
	}
	return convs
}

// failAfter accepts limit bytes, then fails every write.
type failAfter struct {
	limit, n int
}

var errDiskFull = errors.New("disk full")

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n+len(p) > f.limit {
		return 0, errDiskFull
	}
	f.n += len(p)
	return len(p), nil
}

// Row groups are written in the background; a failure there must still
// reach the caller, by a later Write or by Close, and stay sticky.
func TestBackgroundWriteErrorIsReported(t *testing.T) {
	// A small output buffer is not what makes writes reach the sink: the
	// writer's own buffer is 1 MB, so the sink must see more than that.
	convs := manyConversations(3000)
	w, err := parquetio.NewWriter(&failAfter{limit: 1 << 20}, parquetio.WriterOptions{
		Compression: parquetio.Uncompressed, RowGroupRows: 100})
	if err != nil {
		t.Fatal(err)
	}
	var werr error
	for _, c := range convs {
		if werr = w.Write(c); werr != nil {
			break
		}
	}
	cerr := w.Close()
	if werr == nil && cerr == nil {
		t.Fatal("no error from Write or Close on a failing output")
	}
	if cerr == nil || !errors.Is(cerr, errDiskFull) {
		t.Errorf("Close returned %v, want the output's error", cerr)
	}
	if werr != nil {
		if !errors.Is(werr, errDiskFull) {
			t.Errorf("Write returned %v, want the output's error", werr)
		}
		if err := w.Write(convs[0]); err == nil {
			t.Error("Write after an error succeeded")
		}
	}
}

// Abort while a row group is being written in the background must wait for
// it and leave nothing behind (the race detector checks the waiting).
func TestAbortWithRowGroupInFlight(t *testing.T) {
	dir := t.TempDir()
	w, err := parquetio.Create(filepath.Join(dir, "out.parquet"), parquetio.WriterOptions{RowGroupRows: 50})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range manyConversations(120) {
		if err := w.Write(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	assertOnlyFiles(t, dir)
}

// The byte cap, not only the row cap, ends row groups, and the file reads
// back whole whichever ends them.
func TestRowGroupsCutByBytes(t *testing.T) {
	convs := manyConversations(2000) // about 2.2 KB of text each
	data := writeConversations(t, convs, parquetio.WriterOptions{RowGroupBytes: 256 << 10})
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if g := pf.NumRowGroups(); g < 10 || g > 30 {
		t.Errorf("%d row groups for ~4.4 MB under a 256 KB cap", g)
	}
	for i := range pf.NumRowGroups() {
		if n := pf.MetaData().RowGroup(i).NumRows(); n > 200 {
			t.Errorf("row group %d holds %d rows, more than 256 KB of them", i, n)
		}
	}
	path := writeTemp(t, "bytes.parquet", data)
	got, _ := openAll(t, path, parquetio.FormatCanonical)
	assertSameConversations(t, got, convs)
}

// CompressionLevel changes the zstd level and nothing else: every level
// reads back the same, zero means DefaultZstdLevel, and another level
// really is another encoding.
func TestCompressionLevel(t *testing.T) {
	convs := manyConversations(500)
	def := writeConversations(t, convs, parquetio.WriterOptions{})
	fast := writeConversations(t, convs, parquetio.WriterOptions{CompressionLevel: parquetio.DefaultZstdLevel})
	if !bytes.Equal(def, fast) {
		t.Error("level 0 and DefaultZstdLevel wrote different bytes")
	}
	small := writeConversations(t, convs, parquetio.WriterOptions{CompressionLevel: 19})
	if bytes.Equal(small, fast) {
		t.Errorf("level 19 wrote the same bytes as level %d", parquetio.DefaultZstdLevel)
	}
	for name, data := range map[string][]byte{"fast": fast, "small": small} {
		got, _ := openAll(t, writeTemp(t, name+".parquet", data), parquetio.FormatCanonical)
		assertSameConversations(t, got, convs)
	}
}

// A builder may be cut and refilled many times; every batch must hold
// exactly its own rows, including after batches of very different sizes
// (the builder sizes each batch from the last).
func TestConversationBuilderBatches(t *testing.T) {
	b := parquetio.NewConversationBuilder(nil)
	defer b.Release()
	convs := manyConversations(300)
	big := syntheticConversation(9999)
	big.Messages[1].Content = string(bytes.Repeat([]byte("x"), 3<<20))
	sizes := []int{100, 1, 50, 0, 149}
	next := 0
	for round, n := range sizes {
		batch := convs[next : next+n]
		next += n
		for _, c := range batch {
			b.Append(c)
		}
		if round == 2 {
			b.Append(big) // far past the last batch's reservation
			batch = append(append([]*conv.Conversation(nil), batch...), big)
		}
		rec := b.NewRecord()
		if int(rec.NumRows()) != len(batch) {
			t.Fatalf("round %d: %d rows, want %d", round, rec.NumRows(), len(batch))
		}
		ids := rec.Column(0)
		for i, c := range batch {
			if got := ids.ValueStr(i); got != c.ID {
				t.Errorf("round %d row %d: id %q, want %q", round, i, got, c.ID)
			}
		}
		assertContent(t, rec, batch)
		rec.Release()
	}
}

// assertContent checks the last message's content of every row.
func assertContent(tb testing.TB, rec arrow.Record, convs []*conv.Conversation) {
	tb.Helper()
	msgs := rec.Column(6)
	for i, c := range convs {
		s := msgs.ValueStr(i)
		last := c.Messages[len(c.Messages)-1].Content
		if len(last) > 64 {
			last = last[:64]
		}
		if !bytes.Contains([]byte(s), []byte(last)) {
			tb.Errorf("row %d: messages do not hold the last message %q…", i, last)
		}
	}
}
