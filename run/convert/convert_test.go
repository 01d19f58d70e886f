package convert_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/klauspost/compress/zstd"

	"github.com/ac3/ac3/io/arrowipc"
	"github.com/ac3/ac3/io/detect"
	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ingest"
	"github.com/ac3/ac3/pipeline/record"
	"github.com/ac3/ac3/pipeline/synth"
	"github.com/ac3/ac3/run/convert"
	"github.com/ac3/ac3/stages/filter"
)

const fixtures = "../../fixtures"

// collect records what reaches the writer and onBad, in order.
type collect struct {
	ids    []string
	bad    []string
	failAt int // Write fails on this call (1-based); 0 never
}

var errDiskFull = errors.New("disk full")

func (c *collect) Write(cv *conv.Conversation) error {
	if c.failAt > 0 && len(c.ids)+1 == c.failAt {
		return errDiskFull
	}
	c.ids = append(c.ids, cv.ID)
	return nil
}

func (c *collect) onBad(b record.Bad) {
	c.bad = append(c.bad, fmt.Sprintf("%d\t%s", b.Source.Line, b.Reason))
}

func opener(d detect.Options) ingest.Opener {
	d.OpenParquet = parquetio.OpenReader
	return func(ctx context.Context, path string) (record.Reader, string, error) {
		return detect.Open(ctx, path, d)
	}
}

func keeper(t testing.TB, o filter.Options) ingest.Keep {
	t.Helper()
	f, err := filter.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *conv.Conversation) (bool, string) {
		ok, r := f.Check(c)
		return ok, string(r)
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// paths are the ways Run can be asked to read text: the opener alone, and
// the parallel path with batch sizes and worker counts that put batch
// edges everywhere.
func paths(d detect.Options) []struct {
	name string
	opts []convert.Option
} {
	return []struct {
		name string
		opts []convert.Option
	}{
		{"record by record", nil},
		{"parallel with default batches", []convert.Option{convert.WithText(d)}},
		{"parallel with one line a batch", []convert.Option{convert.WithText(d), convert.WithBatch(1, 0), convert.WithWorkers(4)}},
		{"parallel with three lines a batch on one worker", []convert.Option{convert.WithText(d), convert.WithBatch(3, 0), convert.WithWorkers(1)}},
		{"parallel with tiny byte batches", []convert.Option{convert.WithText(d), convert.WithBatch(0, 100), convert.WithWorkers(3)}},
	}
}

func readExpected(t *testing.T) (bad, ids []string) {
	t.Helper()
	f, err := os.Open(filepath.Join(fixtures, "bad/expected.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# Good records (ids): "); ok {
			ids = strings.Fields(rest)
		}
		if line != "" && !strings.HasPrefix(line, "#") {
			bad = append(bad, line)
		}
	}
	return bad, ids
}

func TestBadRecords(t *testing.T) {
	wantBad, wantIDs := readExpected(t)
	file := filepath.Join(fixtures, "bad/wildchat_mixed.jsonl")
	d := detect.Options{MaxLineBytes: 4096}
	for _, p := range paths(d) {
		t.Run(p.name, func(t *testing.T) {
			var c collect
			st, err := convert.Run(testCtx(t), []string{file}, opener(d), nil, &c, c.onBad, p.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.bad, wantBad) {
				t.Errorf("bad records:\n%s\nwant:\n%s", strings.Join(c.bad, "\n"), strings.Join(wantBad, "\n"))
			}
			if !reflect.DeepEqual(c.ids, wantIDs) {
				t.Errorf("kept %v, want %v", c.ids, wantIDs)
			}
			var nBad int64
			for _, n := range st.Bad {
				nBad += n
			}
			if st.Records != int64(len(wantBad)+len(wantIDs)) || st.Kept != int64(len(wantIDs)) || nBad != int64(len(wantBad)) {
				t.Errorf("stats %+v, want %d records, %d kept, %d bad", st, len(wantBad)+len(wantIDs), len(wantIDs), len(wantBad))
			}
		})
	}
}

// synthFile writes n synthetic WildChat conversations, zstd-compressed.
func synthFile(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "synth.jsonl.zst")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw, err := zstd.NewWriter(f, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := synth.WriteWildChat(zw, synth.Options{Seed: 3, Conversations: n}); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOrderAndCounts checks that every path writes the same conversations
// in the same order, with the same drop counts, across two files.
func TestOrderAndCounts(t *testing.T) {
	files := []string{synthFile(t, 1500), synthFile(t, 700)}
	keep := keeper(t, filter.Options{Languages: []string{"English"}, MinUserTurns: 3, DropToxic: true, DropRedacted: true})
	d := detect.Options{}
	var want *collect
	var wantSt convert.Stats
	for _, p := range paths(d) {
		t.Run(p.name, func(t *testing.T) {
			var c collect
			st, err := convert.Run(testCtx(t), files, opener(d), keep, &c, c.onBad, p.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if st.Records != 2200 || st.Kept != int64(len(c.ids)) || len(st.Dropped) < 3 {
				t.Errorf("stats %+v with %d written", st, len(c.ids))
			}
			if want == nil {
				want, wantSt = &c, st
				return
			}
			if !reflect.DeepEqual(c.ids, want.ids) {
				t.Errorf("wrote %d conversations, want the %d of the record-by-record path in the same order", len(c.ids), len(want.ids))
			}
			if !reflect.DeepEqual(st, wantSt) {
				t.Errorf("stats %+v, want %+v", st, wantSt)
			}
		})
	}
}

// TestColumnarFallback reads a Parquet file with WithText set: OpenText
// refuses it and the opener reads it.
func TestColumnarFallback(t *testing.T) {
	_, ids := readExpected(t)
	src := filepath.Join(fixtures, "bad/wildchat_mixed.jsonl")
	d := detect.Options{MaxLineBytes: 4096}
	pq := filepath.Join(t.TempDir(), "good.parquet")
	w, err := parquetio.Create(pq, parquetio.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := convert.Run(testCtx(t), []string{src}, opener(d), nil, w, nil, convert.WithText(d)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var c collect
	st, err := convert.Run(testCtx(t), []string{pq}, opener(d), nil, &c, c.onBad, convert.WithText(d))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.ids, ids) || st.Records != int64(len(ids)) || len(c.bad) != 0 {
		t.Errorf("read %v (%+v), want %v", c.ids, st, ids)
	}
}

func TestStops(t *testing.T) {
	file := synthFile(t, 600)
	d := detect.Options{}
	for _, p := range paths(d) {
		t.Run(p.name+" on a write error", func(t *testing.T) {
			c := collect{failAt: 250}
			st, err := convert.Run(testCtx(t), []string{file}, opener(d), nil, &c, nil, p.opts...)
			if !errors.Is(err, errDiskFull) || !strings.Contains(err.Error(), "writing ") {
				t.Fatalf("error %v, want a writing error wrapping %v", err, errDiskFull)
			}
			if len(c.ids) != 249 || st.Kept != 249 {
				t.Errorf("wrote %d (kept %d), want 249 then stop", len(c.ids), st.Kept)
			}
		})
		t.Run(p.name+" when the context is done", func(t *testing.T) {
			ctx, cancel := context.WithCancel(testCtx(t))
			cancel()
			var c collect
			_, err := convert.Run(ctx, []string{file}, opener(d), nil, &c, nil, p.opts...)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want context.Canceled", err)
			}
		})
		t.Run(p.name+" on a missing file", func(t *testing.T) {
			var c collect
			_, err := convert.Run(testCtx(t), []string{filepath.Join(t.TempDir(), "nope.jsonl")}, opener(d), nil, &c, nil, p.opts...)
			if !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("error %v, want one wrapping os.ErrNotExist", err)
			}
		})
	}
}

// TestDamagedColumnarInput converts a Parquet file whose second row group
// does not decode and an Arrow stream cut before its end (issue 26: the
// first read as a shorter file with no error). Both must be an error naming
// the file, after the records before the damage.
func TestDamagedColumnarInput(t *testing.T) {
	d := detect.Options{OpenArrow: arrowipc.OpenReader}
	dir := t.TempDir()
	// The ten sample conversations in row groups of four, the second row
	// group's pages damaged (fixtures/bad/README.md).
	raw, err := os.ReadFile(filepath.Join(fixtures, "bad/wildchat-rowgroup1-damaged.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	pq := filepath.Join(dir, "damaged.parquet")
	if err := os.WriteFile(pq, raw, 0o644); err != nil {
		t.Fatal(err)
	}

	arrows := filepath.Join(dir, "cut.arrows")
	f, err := os.Create(arrows)
	if err != nil {
		t.Fatal(err)
	}
	sw := ipc.NewWriter(f, ipc.WithSchema(parquetio.Schema()))
	b := parquetio.NewConversationBuilder(memory.DefaultAllocator)
	defer b.Release()
	b.Append(&conv.Conversation{ID: "a", Messages: []conv.Message{{Role: conv.User, Content: "hi"}}})
	rec := b.NewRecord()
	if err := sw.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	// No sw.Close: the stream ends without its end-of-stream marker, as a
	// writer killed between two batches leaves it.
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		path, want string
		before     int
	}{
		{pq, "row group 1", 4},
		{arrows, "end-of-stream marker", 0},
	} {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			var c collect
			st, err := convert.Run(testCtx(t), []string{tt.path}, opener(d), nil, &c, c.onBad, convert.WithText(d))
			if err == nil {
				t.Fatalf("no error; %d records converted", st.Records)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.path) || !strings.Contains(msg, tt.want) {
				t.Errorf("error %v, want one naming the file and %q", msg, tt.want)
			}
			if len(c.ids) != tt.before {
				t.Errorf("converted %d records before the error, want %d", len(c.ids), tt.before)
			}
		})
	}
}
