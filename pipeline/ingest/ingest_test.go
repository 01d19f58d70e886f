package ingest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/io/detect"
	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/pipeline/ingest"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/record"
)

const sample = "../../fixtures/wildchat/wildchat-1m-sample10.jsonl"

func open(ctx context.Context, path string) (record.Reader, string, error) {
	return detect.Open(ctx, path, detect.Options{OpenParquet: parquetio.OpenReader})
}

// commits ingests the sample with opts and returns the records each commit
// covered and the conversations kept.
func commits(t *testing.T, opts ingest.Options) ([]int64, int64) {
	t.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "run.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var got []int64
	opts.Open = open
	opts.OnBatch = func(_ string, n int64, _ ledger.IngestResult, _ int) { got = append(got, n) }
	sum, err := ingest.Run(ctx, l, []string{sample}, opts)
	if err != nil {
		t.Fatal(err)
	}
	n, err := l.CountConversations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != sum.Files[0].Kept {
		t.Fatalf("the run holds %d conversations, the summary says %d kept", n, sum.Files[0].Kept)
	}
	return got, n
}

// A batch is committed when it reaches BatchBytes of conversations, however
// few records it holds: the batch is ingest's memory, and conversations are
// not all the same size.
func TestBatchBoundedByBytes(t *testing.T) {
	whole, kept := commits(t, ingest.Options{})
	if len(whole) != 1 || kept != 10 {
		t.Fatalf("default batches of the 10-record sample: %v, %d kept; want one commit of 10", whole, kept)
	}
	// One byte: every kept conversation fills a batch by itself.
	perRecord, kept1 := commits(t, ingest.Options{BatchBytes: 1})
	if kept1 != kept {
		t.Fatalf("kept %d with byte-bounded batches, %d without", kept1, kept)
	}
	if len(perRecord) < 10 {
		t.Fatalf("commits with BatchBytes 1: %v, want one per record", perRecord)
	}
	var sum int64
	for _, n := range perRecord {
		if n != 1 && n != 0 {
			t.Errorf("a commit with BatchBytes 1 covered %d records", n)
		}
		sum += n
	}
	if sum != 10 {
		t.Errorf("commits covered %d records, want 10", sum)
	}
	// The count bound still holds.
	byCount, _ := commits(t, ingest.Options{BatchSize: 4})
	if len(byCount) != 3 || byCount[0] != 4 || byCount[1] != 4 || byCount[2] != 2 {
		t.Errorf("commits with BatchSize 4: %v, want [4 4 2]", byCount)
	}
}

// damagedParquet is a copy of the bad-input fixture: the ten sample
// conversations in row groups of four, the second row group's pages
// damaged (fixtures/bad/README.md says how it was made).
func damagedParquet(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(damagedFixture)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "damaged.parquet")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const damagedFixture = "../../fixtures/bad/wildchat-rowgroup1-damaged.parquet"

// TestDamagedParquetIsNotDone ingests a Parquet file whose second row
// group's pages do not decode (issue 26: such a file read as a shorter one,
// and ingest marked it done). Ingest must end with an error naming the file
// and the row group, keep the first row group, and leave the input
// unfinished, on the first attempt and on a resumed one.
func TestDamagedParquetIsNotDone(t *testing.T) {
	ctx := context.Background()
	path := damagedParquet(t)
	l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "run.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for attempt := range 2 {
		sum, err := ingest.Run(ctx, l, []string{path}, ingest.Options{Open: open})
		if err == nil {
			t.Fatalf("attempt %d: no error; summary %+v", attempt, sum.Files)
		}
		if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "row group 1") {
			t.Errorf("attempt %d: the error does not name the file and row group 1: %v", attempt, msg)
		}
		in, known, err := l.Input(ctx, path)
		if err != nil || !known {
			t.Fatalf("attempt %d: input %v, %v", attempt, known, err)
		}
		if in.Finished || in.RecordsDone != 4 {
			t.Errorf("attempt %d: input finished %v after %d records; want unfinished after the 4 of row group 0", attempt, in.Finished, in.RecordsDone)
		}
		if n, err := l.CountConversations(ctx); err != nil || n != 4 {
			t.Errorf("attempt %d: the run holds %d conversations (%v), want 4", attempt, n, err)
		}
	}
}

// TestBadFirstLineIsQuarantined ingests files whose first line is not a
// record: it is quarantined with its file, line and reason, and the ten
// records after it are kept, whether the format is given or sniffed.
func TestBadFirstLineIsQuarantined(t *testing.T) {
	good, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, first, format string
		reason              record.Reason
	}{
		{"prose, sniffed", "not json at all", "", record.MalformedJSON},
		{"prose, given", "not json at all", detect.WildChat, record.MalformedJSON},
		{"a broken array, sniffed", "[oops", "", record.MalformedJSON},
		{"a broken array, given", "[oops", detect.WildChat, record.MalformedJSON},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "chats.jsonl")
			if err := os.WriteFile(path, append([]byte(tt.first+"\n"), good...), 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "run.db"), ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			openAs := func(ctx context.Context, p string) (record.Reader, string, error) {
				return detect.Open(ctx, p, detect.Options{Format: tt.format})
			}
			sum, err := ingest.Run(ctx, l, []string{path}, ingest.Options{Open: openAs})
			if err != nil {
				t.Fatal(err)
			}
			if fs := sum.Files[0]; !fs.Finished || fs.Records != 11 || fs.Kept != 10 || fs.Bad != 1 {
				t.Errorf("summary %+v; want finished, 11 records, 10 kept, 1 quarantined", fs)
			}
			var q []ledger.Quarantined
			if err := l.Quarantine(ctx, func(r ledger.Quarantined) error { q = append(q, r); return nil }); err != nil {
				t.Fatal(err)
			}
			if len(q) != 1 || q[0].Source.File != "chats.jsonl" || q[0].Source.Line != 1 || q[0].Reason != tt.reason {
				t.Errorf("quarantined %+v; want chats.jsonl line 1, %s", q, tt.reason)
			}
		})
	}
}

// TestReplacedInput: a file none of whose records the run read (it failed
// before its first batch) may be replaced and is then read from the start;
// a file the run read records of may not change.
func TestReplacedInput(t *testing.T) {
	ctx := context.Background()
	raw, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		read    int64 // records the run had read of the old file
		wantErr string
	}{
		{"nothing read", 0, ""},
		{"records read", 4, "since this run read 4 records of it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "chats.jsonl")
			if err := os.WriteFile(path, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := ledger.Open(ctx, filepath.Join(dir, "run.db"), ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			// The run knew an older file at this path (another size).
			in, err := l.AddInput(ctx, ledger.Input{Path: path, Format: "wildchat", Size: 7, MTimeNs: 1})
			if err != nil {
				t.Fatal(err)
			}
			if c.read > 0 {
				if _, err := l.CommitIngest(ctx, ledger.IngestBatch{InputID: in.ID, RecordsDone: c.read}); err != nil {
					t.Fatal(err)
				}
			}
			sum, err := ingest.Run(ctx, l, []string{path}, ingest.Options{Open: open})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("a changed file with records read: %v", err)
				}
				return
			}
			if err != nil || sum.Files[0].Kept != 10 || !sum.Files[0].Finished {
				t.Fatalf("a replaced file with nothing read: %+v, %v", sum.Files, err)
			}
		})
	}
}
