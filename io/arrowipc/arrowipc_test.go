package arrowipc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/ac3/ac3/io/arrowipc"
	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

var update = flag.Bool("update", false, "rewrite the committed fixtures in fixtures/columnar")

const fixtureDir = "../../fixtures/columnar"

// fixtureConversations are the conversations of the canonical Parquet
// fixture, which the Arrow fixture holds too.
func fixtureConversations(tb testing.TB) []*conv.Conversation {
	tb.Helper()
	r, format, err := parquetio.OpenReader(filepath.Join(fixtureDir, "canonical.parquet"))
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	if format != parquetio.FormatCanonical {
		tb.Fatalf("format %q", format)
	}
	convs, bad := readAll(tb, r)
	if len(bad) > 0 || len(convs) < 4 {
		tb.Fatalf("fixture: %d conversations, %d bad", len(convs), len(bad))
	}
	return convs
}

func readAll(tb testing.TB, r record.Reader) (convs []*conv.Conversation, bads []*record.Bad) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		rec, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			return convs, bads
		}
		if err != nil {
			tb.Fatalf("reading: %v", err)
		}
		if rec.Conv != nil {
			convs = append(convs, rec.Conv)
		} else {
			bads = append(bads, rec.Bad)
		}
	}
}

func openAll(tb testing.TB, path string) []*conv.Conversation {
	tb.Helper()
	r, err := arrowipc.OpenReader(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	convs, bad := readAll(tb, r)
	if len(bad) > 0 {
		tb.Fatalf("unexpected bad record %+v", bad[0])
	}
	return convs
}

func writeArrow(tb testing.TB, convs []*conv.Conversation) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w, err := arrowipc.NewWriter(&buf)
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

func assertSame(tb testing.TB, got, want []*conv.Conversation) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("got %d conversations, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			g, _ := json.Marshal(got[i])
			w, _ := json.Marshal(want[i])
			tb.Errorf("conversation %d:\n got %.400s\nwant %.400s", i, g, w)
		}
	}
}

func TestRoundTripFile(t *testing.T) {
	want := fixtureConversations(t)
	path := writeTemp(t, "c.arrow", writeArrow(t, want))
	assertSame(t, openAll(t, path), want)
}

func TestReadsStreamFormat(t *testing.T) {
	want := fixtureConversations(t)
	// Two batches, written with Arrow's own stream writer.
	var buf bytes.Buffer
	sw := ipc.NewWriter(&buf, ipc.WithSchema(parquetio.Schema()))
	b := parquetio.NewConversationBuilder(memory.DefaultAllocator)
	defer b.Release()
	for _, part := range [][]*conv.Conversation{want[:2], want[2:]} {
		for _, c := range part {
			b.Append(c)
		}
		rec := b.NewRecord()
		if err := sw.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	if bytes.HasPrefix(buf.Bytes(), []byte("ARROW1")) {
		t.Fatal("stream writer wrote a file")
	}
	assertSame(t, openAll(t, writeTemp(t, "c.arrows", buf.Bytes())), want)
}

func TestFileHasCanonicalSchema(t *testing.T) {
	data := writeArrow(t, fixtureConversations(t))
	fr, err := ipc.NewFileReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	if !fr.Schema().Equal(parquetio.Schema()) {
		t.Errorf("schema %s", fr.Schema())
	}
	f, _ := fr.Schema().FieldsByName(parquetio.ColMessages)
	if lt, ok := f[0].Type.(*arrow.ListType); !ok || lt.Elem().ID() != arrow.STRUCT {
		t.Errorf("messages is %s", f[0].Type)
	}
}

func TestOutputIsDeterministic(t *testing.T) {
	convs := fixtureConversations(t)
	if !bytes.Equal(writeArrow(t, convs), writeArrow(t, convs)) {
		t.Fatal("two writes of the same input differ")
	}
}

func TestManyBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	const n = 10_000 // more than two batches
	path := filepath.Join(t.TempDir(), "big.arrow")
	w, err := arrowipc.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		c := &conv.Conversation{ID: fmt.Sprint(i), Format: "jsonl", Messages: []conv.Message{{Role: conv.User, Content: strings.Repeat("x", i%100)}}}
		if err := w.Write(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := openAll(t, path)
	if len(got) != n {
		t.Fatalf("read %d, want %d", len(got), n)
	}
	for i, c := range got {
		if c.ID != fmt.Sprint(i) || len(c.Messages[0].Content) != i%100 {
			t.Fatalf("row %d: %+v", i, c)
		}
	}
	f, _ := os.Open(path)
	defer f.Close()
	fr, err := ipc.NewFileReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	if fr.NumRecords() < 3 {
		t.Errorf("%d batches, want at least 3", fr.NumRecords())
	}
}

func TestCreateAndAbort(t *testing.T) {
	dir := t.TempDir()
	w, err := arrowipc.Create(filepath.Join(dir, "gone.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Write(&conv.Conversation{ID: "x"})
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left %v behind", ents)
	}
}

func TestGarbageIsAnError(t *testing.T) {
	for name, data := range map[string][]byte{
		"empty":          nil,
		"text":           []byte("hello, world\n"),
		"truncated file": writeArrow(t, fixtureConversations(t))[:100],
		"magic only":     []byte("ARROW1\x00\x00ARROW1"),
	} {
		t.Run(name, func(t *testing.T) {
			r, err := arrowipc.OpenReader(writeTemp(t, "x.arrow", data))
			if err == nil {
				_, err = r.Next(context.Background())
				r.Close()
			}
			if err == nil || errors.Is(err, io.EOF) {
				t.Fatalf("err = %v, want a real error", err)
			}
		})
	}
}

// TestFixture checks fixtures/columnar/canonical.arrow: it must hold the same
// conversations as canonical.parquet and be what the writer produces today.
// With -update it is rewritten:
//
//	go test ./io/arrowipc -run TestFixture -update
func TestFixture(t *testing.T) {
	want := fixtureConversations(t)
	data := writeArrow(t, want)
	path := filepath.Join(fixtureDir, "canonical.arrow")
	if *update {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(committed, data) {
		t.Error("canonical.arrow is stale or the writer is not deterministic")
	}
	assertSame(t, openAll(t, path), want)
}
