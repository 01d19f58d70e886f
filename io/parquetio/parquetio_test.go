package parquetio_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet/compress"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
	"github.com/apache/arrow/go/v17/parquet/schema"

	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts parquetio.WriterOptions
	}{
		{"zstd with default row groups", parquetio.WriterOptions{}},
		{"snappy with a row group per row", parquetio.WriterOptions{Compression: parquetio.Snappy, RowGroupRows: 1}},
		{"uncompressed with tiny byte cap", parquetio.WriterOptions{Compression: parquetio.Uncompressed, RowGroupBytes: 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := sampleConversations()
			path := writeTemp(t, "out.parquet", writeConversations(t, want, tc.opts))
			got, bad := openAll(t, path, parquetio.FormatCanonical)
			if len(bad) > 0 {
				t.Fatalf("unexpected bad records: %+v", bad[0])
			}
			assertSameConversations(t, got, want)
		})
	}
}

func TestWriterReplacesInvalidUTF8(t *testing.T) {
	in := &conv.Conversation{ID: "x\xff", Messages: []conv.Message{{Role: conv.User, Content: "caf\xe9"}}}
	path := writeTemp(t, "out.parquet", writeConversations(t, []*conv.Conversation{in}, parquetio.WriterOptions{}))
	got, _ := openAll(t, path, parquetio.FormatCanonical)
	if got[0].ID != "x\uFFFD" || got[0].Messages[0].Content != "caf\uFFFD" {
		t.Fatalf("got %q / %q", got[0].ID, got[0].Messages[0].Content)
	}
}

func TestMessagesAreNestedInTheFile(t *testing.T) {
	data := writeConversations(t, sampleConversations(), parquetio.WriterOptions{})
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()

	// The Parquet schema itself: a LIST group of a group, not a string.
	root := pf.MetaData().Schema.Root()
	node := root.Field(root.FieldIndexByName(parquetio.ColMessages))
	g, ok := node.(*schema.GroupNode)
	if !ok || g.LogicalType().String() != "List" {
		t.Fatalf("messages is %T with logical type %v, want a LIST group", node, node.LogicalType())
	}
	if leaf := pf.MetaData().Schema.Column(pf.MetaData().Schema.ColumnIndexByName("messages.list.element.content")); leaf == nil {
		t.Fatal("no messages.list.element.content leaf")
	}

	// And what an Arrow reader (like pyarrow) makes of it, without our help.
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := fr.Schema()
	if err != nil {
		t.Fatal(err)
	}
	f, _ := sc.FieldsByName(parquetio.ColMessages)
	lt, ok := f[0].Type.(*arrow.ListType)
	if !ok || lt.Elem().ID() != arrow.STRUCT {
		t.Fatalf("messages has Arrow type %s, want list<struct>", f[0].Type)
	}
	if !arrow.TypeEqual(f[0].Type, parquetio.MessagesType()) {
		t.Errorf("messages type %s, want %s", f[0].Type, parquetio.MessagesType())
	}
	if v, _ := sc.Metadata().GetValue(parquetio.SchemaKey); v != parquetio.SchemaVersion {
		t.Errorf("metadata %s = %q, want %q", parquetio.SchemaKey, v, parquetio.SchemaVersion)
	}
	// Field by field: pqarrow adds field-id metadata and names the list
	// element "list" on the way back, neither of which matters.
	want := parquetio.Schema()
	if sc.NumFields() != want.NumFields() {
		t.Fatalf("read back %d fields, want %d", sc.NumFields(), want.NumFields())
	}
	for i, w := range want.Fields() {
		g := sc.Field(i)
		if g.Name != w.Name || g.Nullable != w.Nullable || !arrow.TypeEqual(g.Type, w.Type) {
			t.Errorf("field %d read back as %s, want %s", i, g, w)
		}
	}
}

func TestOutputIsDeterministic(t *testing.T) {
	convs := sampleConversations()
	for _, opts := range []parquetio.WriterOptions{{}, {Compression: parquetio.Snappy, RowGroupRows: 2}} {
		a := writeConversations(t, convs, opts)
		b := writeConversations(t, convs, opts)
		if !bytes.Equal(a, b) {
			t.Errorf("%+v: two writes of the same input differ", opts)
		}
	}
	// Create goes through a temporary file and a rename; same bytes.
	path := filepath.Join(t.TempDir(), "c.parquet")
	w, err := parquetio.Create(path, parquetio.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range convs {
		if err := w.Write(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, writeConversations(t, convs, parquetio.WriterOptions{})) {
		t.Error("Create wrote different bytes from NewWriter")
	}
}

func TestCreateIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.parquet")

	t.Run("the file appears only on Close", func(t *testing.T) {
		w, err := parquetio.Create(path, parquetio.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(sampleConversations()[0]); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("file exists before Close: %v", err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err == nil {
			t.Error("second Close succeeded")
		}
		if err := w.Write(sampleConversations()[0]); err == nil {
			t.Error("Write after Close succeeded")
		}
		assertOnlyFiles(t, dir, "out.parquet")
	})
	t.Run("Abort leaves nothing behind", func(t *testing.T) {
		other := filepath.Join(dir, "aborted.parquet")
		w, err := parquetio.Create(other, parquetio.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = w.Write(sampleConversations()[0])
		if err := w.Abort(); err != nil {
			t.Fatal(err)
		}
		assertOnlyFiles(t, dir, "out.parquet")
	})
}

func assertOnlyFiles(tb testing.TB, dir string, names ...string) {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if !reflect.DeepEqual(got, names) {
		tb.Fatalf("directory holds %v, want %v", got, names)
	}
}

func TestWildChatFixture(t *testing.T) {
	lines := readWildChatLines(t, wildchatFixtureRows)
	got, bad := openAll(t, filepath.Join(fixtureDir, "wildchat-sample5.parquet"), parquetio.FormatWildChat)
	if len(bad) > 0 {
		t.Fatalf("unexpected bad record: %+v", bad[0])
	}
	if len(got) != len(lines) {
		t.Fatalf("got %d conversations, want %d", len(got), len(lines))
	}
	for i, line := range lines {
		var src map[string]json.RawMessage
		if err := json.Unmarshal(line, &src); err != nil {
			t.Fatal(err)
		}
		var want struct {
			Hash         string `json:"conversation_hash"`
			Language     string `json:"language"`
			Toxic        bool   `json:"toxic"`
			Redacted     bool   `json:"redacted"`
			Conversation []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"conversation"`
		}
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatal(err)
		}
		c := got[i]
		if c.ID != want.Hash || c.Format != "wildchat" || c.Language != want.Language ||
			c.Toxic != want.Toxic || c.Redacted != want.Redacted {
			t.Errorf("row %d: got id=%q format=%q lang=%q toxic=%v redacted=%v", i, c.ID, c.Format, c.Language, c.Toxic, c.Redacted)
		}
		if c.Source.Row != int64(i) || !strings.HasSuffix(c.Source.File, "wildchat-sample5.parquet") || c.Source.Line != 0 {
			t.Errorf("row %d: source %+v", i, c.Source)
		}
		if len(c.Messages) != len(want.Conversation) {
			t.Fatalf("row %d: %d messages, want %d", i, len(c.Messages), len(want.Conversation))
		}
		for j, m := range want.Conversation {
			if string(c.Messages[j].Role) != m.Role || c.Messages[j].Content != m.Content {
				t.Errorf("row %d message %d differs", i, j)
			}
		}
		var meta map[string]json.RawMessage
		if err := json.Unmarshal(c.Meta, &meta); err != nil {
			t.Fatalf("row %d: meta is not a JSON object: %v", i, err)
		}
		for _, k := range []string{"model", "timestamp", "turn", "language", "toxic", "redacted", "state",
			"country", "hashed_ip", "header", "openai_moderation", "detoxify_moderation"} {
			if !sameJSON(t, meta[k], src[k]) {
				t.Errorf("row %d: meta %s = %.200s, want %.200s", i, k, meta[k], src[k])
			}
		}
		for _, k := range []string{"conversation", "conversation_hash"} {
			if _, ok := meta[k]; ok {
				t.Errorf("row %d: meta repeats %s", i, k)
			}
		}
	}
}

func sameJSON(tb testing.TB, a, b json.RawMessage) bool {
	tb.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		return false
	}
	if err := json.Unmarshal(b, &y); err != nil {
		tb.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

func TestWildChatBadRowsAreQuarantined(t *testing.T) {
	path := filepath.Join(fixtureDir, "wildchat-bad.parquet")
	got, bad := openAll(t, path, parquetio.FormatWildChat)
	if len(got) != 2 || got[0].ID != "ok-0" || got[1].ID != "ok-6" {
		t.Fatalf("good rows: %+v", got)
	}
	if got[1].System != "Be brief." || len(got[1].Messages) != 2 || got[1].Messages[0].Role != conv.User {
		t.Errorf("leading system message not lifted: %+v", got[1])
	}
	if got[1].Source.Row != 6 {
		t.Errorf("ok-6 has source %+v", got[1].Source)
	}
	want := []struct {
		row    int64
		reason record.Reason
	}{
		{1, record.MissingConversation},
		{2, record.UnknownRole},
		{3, record.NoUserMessage},
		{4, record.InvalidUTF8},
		{5, record.NoUserMessage},
		{7, record.BadField},
	}
	if len(bad) != len(want) {
		t.Fatalf("got %d bad records, want %d", len(bad), len(want))
	}
	for i, w := range want {
		b := bad[i]
		if b.Source.Row != w.row || b.Reason != w.reason || b.Source.File != path {
			t.Errorf("bad %d: row %d reason %s file %s, want row %d reason %s", i, b.Source.Row, b.Reason, b.Source.File, w.row, w.reason)
		}
		if b.Detail == "" || b.Excerpt == "" || len(b.Excerpt) > record.ExcerptBytes {
			t.Errorf("bad %d: detail %q excerpt %q", i, b.Detail, b.Excerpt)
		}
	}
	if !strings.Contains(bad[1].Detail, `"moderator"`) {
		t.Errorf("unknown-role detail %q does not name the role", bad[1].Detail)
	}
}

func TestCanonicalBadRowsAreQuarantined(t *testing.T) {
	sc := parquetio.Schema()
	tw := newTable(t, sc)
	base := func(id string, msgs []conv.Message, meta any) []any {
		return []any{id, "f.jsonl", int64(1), int64(-1), "jsonl", nil, msgs, nil, false, false, meta, nil, nil, nil}
	}
	confidence := base("confidence", []conv.Message{{Role: conv.User, Content: "hi"}}, nil)
	confidence[len(confidence)-1] = 1.5
	rows := [][]any{
		base("good", []conv.Message{{Role: conv.User, Content: "hi"}}, nil),
		base("role", []conv.Message{{Role: "narrator", Content: "hi"}}, nil),
		base("meta", []conv.Message{{Role: conv.User, Content: "hi"}}, "{not json"),
		base("no-messages", []conv.Message{}, nil),
		confidence,
	}
	path := tw.write(t, rows)
	got, bad := openAll(t, path, parquetio.FormatCanonical)
	if len(got) != 2 || got[0].ID != "good" || got[1].ID != "no-messages" {
		t.Fatalf("good rows: %+v", got)
	}
	if len(bad) != 3 || bad[0].Reason != record.UnknownRole || bad[1].Reason != record.BadField || bad[2].Reason != record.BadField ||
		bad[0].Source.Row != 1 || bad[1].Source.Row != 2 || bad[2].Source.Row != 4 {
		t.Fatalf("bad rows: %+v", bad)
	}
}

func TestUnknownColumnsAreRefused(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "text", Type: arrow.BinaryTypes.String}, {Name: "label", Type: arrow.PrimitiveTypes.Int64}}, nil)
	path := newTable(t, sc).write(t, [][]any{{"hello", 1}})
	_, _, err := parquetio.OpenReader(path)
	if err == nil || !strings.Contains(err.Error(), "[text, label]") {
		t.Fatalf("err = %v, want one listing the columns", err)
	}
}

func TestNotParquetIsAnError(t *testing.T) {
	path := writeTemp(t, "x.parquet", []byte("this is not parquet at all, just text\n"))
	if _, _, err := parquetio.OpenReader(path); err == nil {
		t.Fatal("OpenReader accepted a text file")
	}
	if _, _, err := parquetio.OpenReader(filepath.Join(t.TempDir(), "missing.parquet")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: err = %v", err)
	}
}

func TestNextHonoursContext(t *testing.T) {
	path := writeTemp(t, "out.parquet", writeConversations(t, sampleConversations(), parquetio.WriterOptions{}))
	r, _, err := parquetio.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// table wraps a TableWriter writing to a temporary file.
type table struct {
	path string
	w    *parquetio.TableWriter
}

func newTable(tb testing.TB, sc *arrow.Schema) *table {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "t.parquet")
	w, err := parquetio.CreateTable(path, sc, parquetio.WriterOptions{RowGroupRows: 2})
	if err != nil {
		tb.Fatal(err)
	}
	return &table{path: path, w: w}
}

func (t *table) write(tb testing.TB, rows [][]any) string {
	tb.Helper()
	for _, r := range rows {
		if err := t.w.Append(r); err != nil {
			tb.Fatal(err)
		}
	}
	if err := t.w.Close(); err != nil {
		tb.Fatal(err)
	}
	return t.path
}

func TestTableWriter(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "turn", Type: arrow.PrimitiveTypes.Int64},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "kept", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "context", Type: parquetio.MessagesType(), Nullable: true},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	msgs := []conv.Message{{Role: conv.System, Content: "s"}, {Role: conv.User, Content: "ü"}}
	tw := newTable(t, sc)

	t.Run("rows of the wrong shape are refused whole", func(t *testing.T) {
		for _, row := range [][]any{
			{"a", 1, 0.5, true, msgs},                              // too short
			{"a", "one", 0.5, true, msgs, nil},                     // wrong type
			{nil, 1, 0.5, true, msgs, nil},                         // null in a non-nullable column
			{"a", 1, 0.5, true, []string{"not messages"}, nil},     // wrong list
			{"a", 1, 0.5, true, msgs, map[string]string{"k": "v"}}, // not text
		} {
			if err := tw.w.Append(row); err == nil {
				t.Errorf("Append(%v) succeeded", row)
			}
		}
	})
	path := tw.write(t, [][]any{
		{"a", 1, 0.5, true, msgs, json.RawMessage(`{"k":1}`)},
		{"b", int64(2), nil, false, []conv.Message(nil), nil},
		{[]byte("c"), int32(3), float32(1.5), false, []conv.Message{}, "note"},
	})

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(data), nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	if tbl.NumRows() != 3 {
		t.Fatalf("%d rows", tbl.NumRows())
	}
	var rows []string
	tr := array.NewTableReader(tbl, -1)
	defer tr.Release()
	for tr.Next() {
		rec := tr.Record()
		for i := 0; i < int(rec.NumRows()); i++ {
			var cells []string
			for c := 0; c < int(rec.NumCols()); c++ {
				cells = append(cells, rec.Column(c).ValueStr(i))
			}
			rows = append(rows, strings.Join(cells, " | "))
		}
	}
	want := []string{
		`a | 1 | 0.5 | true | [{"content":"s","role":"system"},{"content":"ü","role":"user"}] | {"k":1}`,
		`b | 2 | (null) | false | (null) | (null)`,
		`c | 3 | 1.5 | false | [] | note`,
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	if _, err := parquetio.NewTableWriter(io.Discard, arrow.NewSchema([]arrow.Field{{Name: "t", Type: arrow.FixedWidthTypes.Date32}}, nil), parquetio.WriterOptions{}); err == nil {
		t.Error("NewTableWriter accepted a date32 column")
	}
}

// TestLargeWriteStaysBounded writes and reads back 50,000 conversations (about
// 100 MB of text) and checks that neither side keeps much more than a row
// group or a batch alive.
func TestLargeWriteStaysBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	const n = 50_000
	path := filepath.Join(t.TempDir(), "big.parquet")
	w, err := parquetio.Create(path, parquetio.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base := liveHeap()
	var peak uint64
	c := syntheticConversation(0)
	for i := range n {
		c.ID = fmt.Sprintf("conv-%06d", i)
		c.Messages[0].Content = fmt.Sprintf("question %d: %s", i, c.Messages[1].Content[:100])
		if err := w.Write(c); err != nil {
			t.Fatal(err)
		}
		if i%5000 == 4999 {
			peak = max(peak, liveHeap())
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	const limit = 96 << 20
	t.Logf("writer: peak live heap %d MB above start", int64(peak-base)>>20)
	if peak > base+limit {
		t.Errorf("writer kept %d MB alive, want under %d MB", (peak-base)>>20, limit>>20)
	}

	r, format, err := parquetio.OpenReader(path)
	if err != nil || format != parquetio.FormatCanonical {
		t.Fatal(err, format)
	}
	defer r.Close()
	ctx := context.Background()
	peak = 0
	for i := 0; ; i++ {
		rec, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			if i != n {
				t.Fatalf("read %d conversations, want %d", i, n)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Conv == nil || rec.Conv.ID != fmt.Sprintf("conv-%06d", i) || len(rec.Conv.Messages) != 4 ||
			!strings.HasPrefix(rec.Conv.Messages[0].Content, fmt.Sprintf("question %d:", i)) {
			t.Fatalf("row %d: %+v", i, rec)
		}
		if i%5000 == 4999 {
			peak = max(peak, liveHeap())
		}
	}
	t.Logf("reader: peak live heap %d MB above start", int64(peak-base)>>20)
	if peak > base+limit {
		t.Errorf("reader kept %d MB alive, want under %d MB", (peak-base)>>20, limit>>20)
	}
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if g := pf.NumRowGroups(); g < n/parquetio.DefaultRowGroupRows {
		t.Errorf("%d row groups, want at least %d", g, n/parquetio.DefaultRowGroupRows)
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// syntheticConversation is about 2 KB of chat text in four messages.
func syntheticConversation(i int) *conv.Conversation {
	para := strings.Repeat("The quick brown fox jumps over the lazy dog, again and again. ", 8)
	return &conv.Conversation{
		ID:     fmt.Sprintf("conv-%06d", i),
		Source: conv.Source{File: "synthetic.jsonl", Line: int64(i + 1), Row: -1},
		Format: "jsonl",
		Messages: []conv.Message{
			{Role: conv.User, Content: "question: " + para[:120]},
			{Role: conv.Assistant, Content: para + para},
			{Role: conv.User, Content: "and then? " + para[:200]},
			{Role: conv.Assistant, Content: para},
		},
		Language: "English",
		Meta:     json.RawMessage(`{"model":"gpt-4","turn":2}`),
	}
}

// messageBytes is the text a conversation carries, for throughput figures.
func messageBytes(c *conv.Conversation) int64 {
	n := int64(len(c.System))
	for _, m := range c.Messages {
		n += int64(len(m.Content))
	}
	return n
}

// BenchmarkParquetWrite measures Writer throughput in MB/s of message text,
// on synthetic English text and on the real WildChat sample (multilingual,
// code, harder to compress), which is skipped when the shared data is absent.
func BenchmarkParquetWrite(b *testing.B) {
	synthetic := make([]*conv.Conversation, 1000)
	for i := range synthetic {
		synthetic[i] = syntheticConversation(i)
		synthetic[i].Messages[1].Content = fmt.Sprintf("%d %s", i*7919, synthetic[i].Messages[1].Content)
	}
	for _, tc := range []struct {
		name  string
		codec parquetio.Compression
		convs func(testing.TB) []*conv.Conversation
	}{
		{"synthetic/zstd", parquetio.Zstd, func(testing.TB) []*conv.Conversation { return synthetic }},
		{"synthetic/snappy", parquetio.Snappy, func(testing.TB) []*conv.Conversation { return synthetic }},
		{"wildchat/zstd", parquetio.Zstd, wildchatConversations},
		{"wildchat/snappy", parquetio.Snappy, wildchatConversations},
	} {
		b.Run(tc.name, func(b *testing.B) {
			convs := tc.convs(b)
			var text int64
			for _, c := range convs {
				text += messageBytes(c)
			}
			w, err := parquetio.NewWriter(io.Discard, parquetio.WriterOptions{Compression: tc.codec})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(text / int64(len(convs)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := w.Write(convs[i%len(convs)]); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// wildchatConversations reads the shared WildChat sample through the
// Parquet fixture, or skips.
func wildchatConversations(tb testing.TB) []*conv.Conversation {
	tb.Helper()
	lines := readWildChatLines(tb, 10)
	path := writeTemp(tb, "wc.parquet", buildWildChatParquet(tb, lines))
	convs, _ := openAll(tb, path, parquetio.FormatWildChat)
	return convs
}

// TestFixtureCodec guards the WildChat fixture's shape: the Hugging Face
// shards are snappy, so ours is too.
func TestFixtureCodec(t *testing.T) {
	pf, err := file.OpenParquetFile(filepath.Join(fixtureDir, "wildchat-sample5.parquet"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	cc, err := pf.MetaData().RowGroup(0).ColumnChunk(0)
	if err != nil {
		t.Fatal(err)
	}
	if got := cc.Compression(); got != compress.Codecs.Snappy {
		t.Errorf("codec %v", got)
	}
}

// TestTableWriterNestedColumns writes list<utf8>, list<struct> (with a list
// inside) and struct columns and reads them back with pqarrow, an
// independent reader: each must come back as the nested value appended, an
// empty list as [], a null as null.
func TestTableWriterNestedColumns(t *testing.T) {
	item := arrow.StructOf(
		arrow.Field{Name: "text", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "turn", Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: "tags", Type: parquetio.StringListType()},
		arrow.Field{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "refs", Type: parquetio.StringListType(), Nullable: true},
		{Name: "items", Type: parquetio.ListOfNullable(item), Nullable: true},
		{Name: "pair", Type: arrow.StructOf(
			arrow.Field{Name: "a", Type: arrow.BinaryTypes.String},
			arrow.Field{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
		)},
	}, nil)
	tw := newTable(t, sc)
	pair := []any{"x", true}
	for _, row := range [][]any{
		{"a", []int{1}, nil, pair},                                        // not a list of strings
		{"a", nil, []any{[]any{"t", int64(1)}}, pair},                     // struct too short
		{"a", nil, []any{[]any{"t", "one", []string{}, nil}}, pair},       // wrong field type
		{"a", nil, []any{[]any{"t", int64(1), nil, nil}}, pair},           // null in a non-nullable field
		{"a", nil, nil, nil},                                              // null struct, not nullable
		{"a", []any{1}, nil, pair},                                        // an int in a list of strings
		{"a", nil, []conv.Message{{Role: conv.User, Content: "m"}}, pair}, // messages are not items
	} {
		if err := tw.w.Append(row); err == nil {
			t.Errorf("Append(%v) succeeded", row)
		}
	}
	path := tw.write(t, [][]any{
		{"a", []string{"1a", "2u"}, []any{[]any{"keep it short", int64(2), []string{"output"}, 0.5}, []any{"in French", 3, []string{}, nil}}, pair},
		{"b", []string{}, []any{}, []any{"y", false}},
		{"c", nil, nil, []any{"z", true}},
		{"d", []any{"3a", nil}, []any{nil, []any{"x", int32(4), []any{"p", "q"}, float32(1)}}, pair},
	})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(data), nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	for i, f := range tbl.Schema().Fields() {
		if !arrow.TypeEqual(f.Type, sc.Field(i).Type) && f.Type.String() != strings.ReplaceAll(sc.Field(i).Type.String(), "element:", "list:") {
			t.Errorf("column %s read back as %s, want %s", f.Name, f.Type, sc.Field(i).Type)
		}
	}
	var rows []string
	tr := array.NewTableReader(tbl, -1)
	defer tr.Release()
	for tr.Next() {
		rec := tr.Record()
		for i := 0; i < int(rec.NumRows()); i++ {
			var cells []string
			for c := 0; c < int(rec.NumCols()); c++ {
				cells = append(cells, rec.Column(c).ValueStr(i))
			}
			rows = append(rows, strings.Join(cells, " | "))
		}
	}
	want := []string{
		`a | ["1a","2u"] | [{"score":0.5,"tags":["output"],"text":"keep it short","turn":2},{"score":null,"tags":[],"text":"in French","turn":3}] | {"a":"x","ok":true}`,
		`b | [] | [] | {"a":"y","ok":false}`,
		`c | (null) | (null) | {"a":"z","ok":true}`,
		`d | ["3a",null] | [null,{"score":1,"tags":["p","q"],"text":"x","turn":4}] | {"a":"x","ok":true}`,
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	bad := arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.FixedWidthTypes.Date32)}}, nil)
	if _, err := parquetio.NewTableWriter(io.Discard, bad, parquetio.WriterOptions{}); err == nil {
		t.Error("NewTableWriter accepted a list of date32")
	}
}
