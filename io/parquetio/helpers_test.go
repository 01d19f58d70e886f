package parquetio_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/compress"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

var update = flag.Bool("update", false, "rewrite the committed fixtures in fixtures/columnar")

const (
	fixtureDir = "../../fixtures/columnar"
	// Real WildChat records, kept in the repository.
	wildchatJSONL = "../../fixtures/wildchat/wildchat-1m-sample10.jsonl"
	// How many WildChat lines the fixture holds.
	wildchatFixtureRows = 5
)

// sampleConversations covers what a round trip must keep: every field set,
// unicode and control characters, empty and absent values, a system message
// in the middle, JSON meta.
func sampleConversations() []*conv.Conversation {
	long := strings.Repeat("A long answer with ünïcödé and more. ", 300)
	return []*conv.Conversation{
		{
			ID:     "c1",
			Source: conv.Source{File: "in/chats.jsonl", Line: 3, Row: -1},
			Format: "jsonl",
			System: "You are terse.",
			Messages: []conv.Message{
				{Role: conv.User, Content: "What is 2+2?"},
				{Role: conv.Assistant, Content: "4"},
				{Role: conv.Tool, Content: `{"result": 4}`},
				{Role: conv.User, Content: "And 3+3?"},
			},
			Language: "English",
			Toxic:    true,
			Meta:     json.RawMessage(`{"model":"gpt-4","turn":2}`),

			LanguageSource:     conv.LanguageIdentified,
			LanguageDetector:   "whatlanggo v1.0.1",
			LanguageConfidence: 0.8125,
		},
		{
			ID:     "ü-2 中文",
			Source: conv.Source{File: "shard-00001.parquet", Row: 7},
			Format: "wildchat",
			Messages: []conv.Message{
				{Role: conv.User, Content: "你好，世界 🌍 — Ελληνικά, עברית, \"quotes\" \\ back\nslash\ttab\x00nul"},
				{Role: conv.Assistant, Content: "こんにちは 👋🏽"},
			},
			Language: "Chinese",
			Redacted: true,
			Meta:     json.RawMessage(`{"nested":{"a":[1,2,null],"s":"ü"}}`),

			LanguageSource: conv.LanguageFromInput,
		},
		{ID: ""}, // everything empty, no messages
		{
			ID:     "c4",
			Format: "sharegpt",
			Messages: []conv.Message{
				{Role: conv.User, Content: ""},
				{Role: conv.Assistant, Content: long},
				{Role: conv.System, Content: "mid-stream note"},
				{Role: conv.User, Content: "ok"},
			},
		},
	}
}

// normalize makes an empty message list nil, which is how readers return it.
func normalize(c *conv.Conversation) *conv.Conversation {
	d := *c
	if len(d.Messages) == 0 {
		d.Messages = nil
	}
	if len(d.Meta) == 0 {
		d.Meta = nil
	}
	return &d
}

func assertSameConversations(tb testing.TB, got, want []*conv.Conversation) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("got %d conversations, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := normalize(got[i]), normalize(want[i])
		if !reflect.DeepEqual(g, w) {
			gj, _ := json.Marshal(g)
			wj, _ := json.Marshal(w)
			tb.Errorf("conversation %d differs:\n got %.600s\nwant %.600s", i, gj, wj)
		}
	}
}

// readAll drains r, failing the test on any error but io.EOF.
func readAll(tb testing.TB, r record.Reader) (convs []*conv.Conversation, bads []*record.Bad) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		rec, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			return convs, bads
		}
		if err != nil {
			tb.Fatalf("reading: %v", err)
		}
		if (rec.Conv == nil) == (rec.Bad == nil) {
			tb.Fatalf("record has both or neither of Conv and Bad: %+v", rec)
		}
		if rec.Conv != nil {
			convs = append(convs, rec.Conv)
		} else {
			bads = append(bads, rec.Bad)
		}
	}
}

func openAll(tb testing.TB, path, wantFormat string) ([]*conv.Conversation, []*record.Bad) {
	tb.Helper()
	r, format, err := parquetio.OpenReader(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	if format != wantFormat {
		tb.Fatalf("format = %q, want %q", format, wantFormat)
	}
	return readAll(tb, r)
}

func writeConversations(tb testing.TB, convs []*conv.Conversation, opts parquetio.WriterOptions) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w, err := parquetio.NewWriter(&buf, opts)
	if err != nil {
		tb.Fatal(err)
	}
	for _, c := range convs {
		if err := w.Write(c); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func writeTemp(tb testing.TB, name string, data []byte) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

// readWildChatLines returns the first n lines of the WildChat sample.
func readWildChatLines(tb testing.TB, n int) [][]byte {
	tb.Helper()
	f, err := os.Open(wildchatJSONL)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var lines [][]byte
	for len(lines) < n && sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return lines
}

// wildchatSchema is WildChat-1M's schema as its Hugging Face Parquet shards
// declare it. categories are the moderation category names, which vary
// between releases, so they come from the data.
func wildchatSchema(categories []string) *arrow.Schema {
	str := arrow.BinaryTypes.String
	ts := arrow.FixedWidthTypes.Timestamp_us // tz=UTC
	header := arrow.StructOf(
		arrow.Field{Name: "accept-language", Type: str, Nullable: true},
		arrow.Field{Name: "user-agent", Type: str, Nullable: true},
	)
	message := arrow.StructOf(
		arrow.Field{Name: "content", Type: str, Nullable: true},
		arrow.Field{Name: "country", Type: str, Nullable: true},
		arrow.Field{Name: "hashed_ip", Type: str, Nullable: true},
		arrow.Field{Name: "header", Type: header, Nullable: true},
		arrow.Field{Name: "language", Type: str, Nullable: true},
		arrow.Field{Name: "redacted", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		arrow.Field{Name: "role", Type: str, Nullable: true},
		arrow.Field{Name: "state", Type: str, Nullable: true},
		arrow.Field{Name: "timestamp", Type: ts, Nullable: true},
		arrow.Field{Name: "toxic", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		arrow.Field{Name: "turn_identifier", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	)
	var flags, scores []arrow.Field
	for _, c := range categories {
		flags = append(flags, arrow.Field{Name: c, Type: arrow.FixedWidthTypes.Boolean, Nullable: true})
		scores = append(scores, arrow.Field{Name: c, Type: arrow.PrimitiveTypes.Float64, Nullable: true})
	}
	openai := arrow.StructOf(
		arrow.Field{Name: "categories", Type: arrow.StructOf(flags...), Nullable: true},
		arrow.Field{Name: "category_scores", Type: arrow.StructOf(scores...), Nullable: true},
		arrow.Field{Name: "flagged", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	)
	var detox []arrow.Field
	for _, n := range []string{"identity_attack", "insult", "obscene", "severe_toxicity", "sexual_explicit", "threat", "toxicity"} {
		detox = append(detox, arrow.Field{Name: n, Type: arrow.PrimitiveTypes.Float64, Nullable: true})
	}
	return arrow.NewSchema([]arrow.Field{
		{Name: "conversation_hash", Type: str, Nullable: true},
		{Name: "model", Type: str, Nullable: true},
		{Name: "timestamp", Type: ts, Nullable: true},
		{Name: "conversation", Type: arrow.ListOf(message), Nullable: true},
		{Name: "turn", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "language", Type: str, Nullable: true},
		{Name: "openai_moderation", Type: arrow.ListOf(openai), Nullable: true},
		{Name: "detoxify_moderation", Type: arrow.ListOf(arrow.StructOf(detox...)), Nullable: true},
		{Name: "toxic", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "redacted", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "state", Type: str, Nullable: true},
		{Name: "country", Type: str, Nullable: true},
		{Name: "hashed_ip", Type: str, Nullable: true},
		{Name: "header", Type: header, Nullable: true},
	}, nil)
}

// buildWildChatParquet turns WildChat JSONL lines into a Parquet file shaped
// like the Hugging Face release (snappy, as the datasets library writes).
func buildWildChatParquet(tb testing.TB, lines [][]byte) []byte {
	tb.Helper()
	return buildWildChatParquetWith(tb, lines, compress.Codecs.Snappy)
}

// buildWildChatParquetWith is buildWildChatParquet with another codec.
func buildWildChatParquetWith(tb testing.TB, lines [][]byte, codec compress.Compression) []byte {
	tb.Helper()
	var first struct {
		OpenAI []struct {
			Categories map[string]bool `json:"categories"`
		} `json:"openai_moderation"`
	}
	if err := json.Unmarshal(lines[0], &first); err != nil {
		tb.Fatal(err)
	}
	var cats []string
	for c := range first.OpenAI[0].Categories {
		cats = append(cats, c)
	}
	sort.Strings(cats)
	sc := wildchatSchema(cats)
	js := "[" + string(bytes.Join(lines, []byte(","))) + "]"
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(js))
	if err != nil {
		tb.Fatal(err)
	}
	defer rec.Release()
	return writeArrowParquet(tb, rec, codec)
}

// writeArrowParquet writes rec as a Parquet file with plain pqarrow, as a
// third-party tool would.
func writeArrowParquet(tb testing.TB, rec arrow.Record, codec compress.Compression) []byte {
	tb.Helper()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(codec))
	fw, err := pqarrow.NewFileWriter(rec.Schema(), &buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		tb.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		tb.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// buildBadWildChatParquet is a WildChat-shaped file with one row per way a
// row can be quarantined, between good rows.
func buildBadWildChatParquet(tb testing.TB) []byte {
	tb.Helper()
	str := arrow.BinaryTypes.String
	message := arrow.StructOf(
		arrow.Field{Name: "content", Type: str, Nullable: true},
		arrow.Field{Name: "role", Type: str, Nullable: true},
		arrow.Field{Name: "turn_identifier", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "conversation_hash", Type: str, Nullable: true},
		{Name: "model", Type: str, Nullable: true},
		{Name: "conversation", Type: arrow.ListOf(message), Nullable: true},
		{Name: "language", Type: str, Nullable: true},
		{Name: "toxic", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "redacted", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	hash := rb.Field(0).(*array.StringBuilder)
	model := rb.Field(1).(*array.StringBuilder)
	list := rb.Field(2).(*array.ListBuilder)
	msg := list.ValueBuilder().(*array.StructBuilder)
	content := msg.FieldBuilder(0).(*array.StringBuilder)
	role := msg.FieldBuilder(1).(*array.StringBuilder)
	turn := msg.FieldBuilder(2).(*array.Int64Builder)
	lang := rb.Field(3).(*array.StringBuilder)
	toxic := rb.Field(4).(*array.BooleanBuilder)
	redacted := rb.Field(5).(*array.BooleanBuilder)

	type m struct{ role, content string }
	row := func(id string, msgs []m, nullConv bool) {
		if id == "" {
			hash.AppendNull()
		} else {
			hash.Append(id)
		}
		model.Append("gpt-3.5-turbo")
		if nullConv {
			list.AppendNull()
		} else {
			list.Append(true)
			for i, x := range msgs {
				msg.Append(true)
				content.Append(x.content)
				role.Append(x.role)
				turn.Append(int64(i / 2))
			}
		}
		lang.Append("English")
		toxic.Append(false)
		redacted.Append(false)
	}
	row("ok-0", []m{{"user", "hi"}, {"assistant", "hello"}}, false)
	row("null-conv", nil, true)
	row("bad-role", []m{{"user", "hi"}, {"moderator", "removed"}}, false)
	row("no-user", []m{{"assistant", "unprompted"}}, false)
	row("bad-utf8", []m{{"user", "caf\xe9 \xff\xfe"}, {"assistant", "?"}}, false)
	row("empty", nil, false)
	row("ok-6", []m{{"system", "Be brief."}, {"user", "hi"}, {"assistant", "hey"}}, false)
	row("", []m{{"user", "no id"}}, false)
	rec := rb.NewRecord()
	defer rec.Release()
	return writeArrowParquet(tb, rec, compress.Codecs.Snappy)
}
