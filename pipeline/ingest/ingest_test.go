package ingest_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ac3/ac3/io/detect"
	"github.com/ac3/ac3/io/record"
	"github.com/ac3/ac3/pipeline/ingest"
	"github.com/ac3/ac3/pipeline/ledger"
)

const sample = "../../fixtures/wildchat/wildchat-1m-sample10.jsonl"

func open(ctx context.Context, path string) (record.Reader, string, error) {
	return detect.Open(ctx, path, detect.Options{})
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
