package arrowipc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/ac3/ac3/io/arrowipc"
	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

// Issue 26 for Arrow IPC: a damaged file must be an error naming the file
// (and the record batch, once batches are read), or read as exactly the
// rows its metadata promises, never as fewer.

// writeBatches writes one record batch per part with Arrow's own file
// writer (or stream writer), so tests control where batches start.
func writeBatches(tb testing.TB, parts [][]*conv.Conversation, stream bool) []byte {
	tb.Helper()
	var buf bytes.Buffer
	var write func(*parquetio.ConversationBuilder) error
	var closeW func() error
	if stream {
		w := ipc.NewWriter(&buf, ipc.WithSchema(parquetio.Schema()))
		write = func(b *parquetio.ConversationBuilder) error {
			rec := b.NewRecord()
			defer rec.Release()
			return w.Write(rec)
		}
		closeW = w.Close
	} else {
		f, err := os.Create(filepath.Join(tb.TempDir(), "batches.arrow"))
		if err != nil {
			tb.Fatal(err)
		}
		defer f.Close()
		w, err := ipc.NewFileWriter(f, ipc.WithSchema(parquetio.Schema()))
		if err != nil {
			tb.Fatal(err)
		}
		write = func(b *parquetio.ConversationBuilder) error {
			rec := b.NewRecord()
			defer rec.Release()
			return w.Write(rec)
		}
		closeW = func() error {
			if err := w.Close(); err != nil {
				return err
			}
			data, err := os.ReadFile(f.Name())
			buf.Write(data)
			return err
		}
	}
	b := parquetio.NewConversationBuilder(memory.DefaultAllocator)
	defer b.Release()
	for _, part := range parts {
		for _, c := range part {
			b.Append(c)
		}
		if err := write(b); err != nil {
			tb.Fatal(err)
		}
	}
	if err := closeW(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// readRecords reads every record of the Arrow file at path, stopping at the
// first error.
func readRecords(path string) ([]record.Record, error) {
	return readRecordsUpTo(path, -1)
}

// readRecordsUpTo is readRecords stopping after max records (max < 0: no
// limit) with no error.
func readRecordsUpTo(path string, max int) ([]record.Record, error) {
	r, err := arrowipc.OpenReader(path)
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

// arrowRows counts the rows of the batches in data with Arrow's own
// readers: for a file, the batches its footer lists; for a stream, the
// batches before its end.
func arrowRows(data []byte) (rows int64, err error) {
	err = parquetio.CatchPanic(func() error {
		if bytes.HasPrefix(data, []byte("ARROW1")) {
			fr, err := ipc.NewFileReader(bytes.NewReader(data))
			if err != nil {
				return err
			}
			defer fr.Close()
			for i := range fr.NumRecords() {
				rec, err := fr.Record(i)
				if err != nil {
					return err
				}
				rows += rec.NumRows()
			}
			return nil
		}
		sr, err := ipc.NewReader(bytes.NewReader(data))
		if err != nil {
			return err
		}
		defer sr.Release()
		for sr.Next() {
			rows += sr.Record().NumRows()
		}
		return sr.Err()
	})
	return rows, err
}

// bodyRows counts the rows of the record batches an IPC file holds between
// its magic and its footer, read as the stream they are, without the
// footer.
func bodyRows(data []byte) (int64, error) {
	if len(data) < 18 {
		return 0, fmt.Errorf("%d bytes", len(data))
	}
	n := int64(int32(binary.LittleEndian.Uint32(data[len(data)-10:])))
	end := int64(len(data)) - 10 - n
	if n <= 0 || end < 8 {
		return 0, fmt.Errorf("footer length %d", n)
	}
	return arrowRows(data[8:end])
}

// checkRead applies the oracle to one read of a damaged copy at path of
// data: an error naming the file, or as many records as the metadata
// promises (for a file, its footer, which must agree with its body).
func checkRead(path string, data []byte, got []record.Record, err error) string {
	if err != nil {
		if !strings.Contains(err.Error(), path) {
			return fmt.Sprintf("an error that does not name the file: %v", err)
		}
		return ""
	}
	rows, rerr := arrowRows(data)
	if rerr != nil {
		return fmt.Sprintf("read %d records with no error, but Arrow cannot read the batches: %v", len(got), rerr)
	}
	if int64(len(got)) != rows {
		return fmt.Sprintf("read %d records with no error where the metadata promises %d", len(got), rows)
	}
	if bytes.HasPrefix(data, []byte("ARROW1")) {
		body, berr := bodyRows(data)
		if berr != nil || body != rows {
			return fmt.Sprintf("read %d records with no error where the file holds %d (%v)", len(got), body, berr)
		}
	}
	return ""
}

func splitConversations(tb testing.TB) [][]*conv.Conversation {
	convs := fixtureConversations(tb)
	return [][]*conv.Conversation{convs[:1], convs[1:3], convs[3:]}
}

// TestFooterListsEveryBatch splices the footer of a file of two batches
// onto the body of one of three: Arrow reads such a file by its footer and
// sees two. The reader must hold the footer to the batches the file holds.
func TestFooterListsEveryBatch(t *testing.T) {
	parts := splitConversations(t)
	three := writeBatches(t, parts, false)
	two := writeBatches(t, parts[:2], false)
	footer := func(d []byte) int { // where the footer starts
		return len(d) - 10 - int(binary.LittleEndian.Uint32(d[len(d)-10:]))
	}
	spliced := append(append([]byte(nil), three[:footer(three)]...), two[footer(two):]...)
	if rows, err := arrowRows(spliced); err != nil || rows != int64(len(parts[0])+len(parts[1])) {
		t.Fatalf("Arrow reads the spliced file as %d rows (%v); the test needs it to read the first two batches", rows, err)
	}
	path := writeTemp(t, "spliced.arrow", spliced)
	got, err := readRecords(path)
	if err == nil {
		t.Fatalf("read %d records with no error", len(got))
	}
	if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "footer lists 2 record batches, the file holds 3") {
		t.Errorf("error %v", msg)
	}
}

// TestStreamMustEnd checks that a stream which stops between two batches,
// or goes on after its end marker, is an error: read by Arrow alone, each
// is a shorter stream with no error.
func TestStreamMustEnd(t *testing.T) {
	parts := splitConversations(t)
	whole := writeBatches(t, parts, true)
	first := writeBatches(t, parts[:1], true)
	const eos = 8 // continuation marker and a zero length
	if !bytes.Equal(whole[:len(first)-eos], first[:len(first)-eos]) {
		t.Fatal("the streams do not share their first batch")
	}
	for _, tt := range []struct {
		name string
		data []byte
		want string
	}{
		{"cut before its end marker", whole[:len(whole)-eos], "without its end-of-stream marker"},
		{"cut between batches", first[:len(first)-eos], "without its end-of-stream marker"},
		{"an end marker between batches", append(append([]byte(nil), first...), whole[len(first)-eos:]...), "after the end-of-stream marker"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := arrowRows(tt.data); err != nil {
				t.Fatalf("Arrow refuses it already (%v); the test needs a stream it reads", err)
			}
			path := writeTemp(t, "s.arrows", tt.data)
			got, err := readRecords(path)
			if err == nil {
				t.Fatalf("read %d records with no error", len(got))
			}
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, tt.want) {
				t.Errorf("error %v, want one naming the file and saying %q", msg, tt.want)
			}
		})
	}
	// The whole stream still reads.
	got, err := readRecords(writeTemp(t, "whole.arrows", whole))
	if err != nil || len(got) != len(fixtureConversations(t)) {
		t.Fatalf("the whole stream: %d records, %v", len(got), err)
	}
}

// TestFlippedBytesScan damages IPC files and streams at seeded places, one
// at a time, as the Parquet scan does. IPC has no checksums, so flipped
// text can read as other text; the row counts are what must hold.
func TestFlippedBytesScan(t *testing.T) {
	parts := splitConversations(t)
	places := 150
	if testing.Short() {
		places = 40
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"file", writeBatches(t, parts, false)},
		{"stream", writeBatches(t, parts, true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			want, err := readRecords(writeTemp(t, "intact.arrow", tc.data))
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(26, uint64(len(tc.data))))
			var errs, identical, failed int
			for range places {
				off := rng.IntN(len(tc.data))
				data := append([]byte(nil), tc.data...)
				for i := off; i < off+64 && i < len(data); i += 3 {
					data[i] ^= 0xFF
				}
				path := filepath.Join(dir, fmt.Sprintf("flipped-at-%d.arrow", off))
				if err := os.WriteFile(path, data, 0o644); err != nil {
					t.Fatal(err)
				}
				got, err := readRecords(path)
				if msg := checkRead(path, data, got, err); msg != "" {
					failed++
					t.Errorf("64 bytes flipped at byte %d of %d: %s", off, len(data), msg)
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

// TestBatchLengthMatchesColumns writes a batch whose metadata counts fewer
// rows than its columns hold (Arrow writes and reads that, reading only the
// rows counted): the reader must refuse it, naming the record batch.
func TestBatchLengthMatchesColumns(t *testing.T) {
	convs := fixtureConversations(t)
	b := parquetio.NewConversationBuilder(memory.DefaultAllocator)
	defer b.Release()
	for _, c := range convs[:2] {
		b.Append(c)
	}
	whole := b.NewRecord()
	defer whole.Release()
	short := array.NewRecord(whole.Schema(), whole.Columns(), 1)
	defer short.Release()
	for _, stream := range []bool{false, true} {
		var buf bytes.Buffer
		var err error
		if stream {
			w := ipc.NewWriter(&buf, ipc.WithSchema(parquetio.Schema()))
			if err = w.Write(short); err == nil {
				err = w.Close()
			}
		} else {
			f, ferr := os.Create(filepath.Join(t.TempDir(), "short.arrow"))
			if ferr != nil {
				t.Fatal(ferr)
			}
			w, werr := ipc.NewFileWriter(f, ipc.WithSchema(parquetio.Schema()))
			if werr != nil {
				t.Fatal(werr)
			}
			if err = w.Write(short); err == nil {
				err = w.Close()
			}
			f.Close()
			data, rerr := os.ReadFile(f.Name())
			if rerr != nil {
				t.Fatal(rerr)
			}
			buf.Write(data)
		}
		if err != nil {
			t.Fatal(err)
		}
		if rows, err := arrowRows(buf.Bytes()); err != nil || rows != 1 {
			t.Fatalf("stream %v: Arrow reads %d rows (%v); the test needs it to read 1", stream, rows, err)
		}
		path := writeTemp(t, "short.arrow", buf.Bytes())
		got, err := readRecords(path)
		if err == nil {
			t.Fatalf("stream %v: read %d records with no error", stream, len(got))
		}
		if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "record batch 0: column id has 2 rows, the batch 1") {
			t.Errorf("stream %v: error %v", stream, msg)
		}
	}
}
