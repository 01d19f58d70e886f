package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
)

// The log removed under a writer: the next commit stops with
// ErrWALRemoved, nothing committed before is lost, even though the process
// is then killed without closing, and the next writer goes on.
func TestWALRemovedUnderAWriter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "run.db")
	l, err := ledger.Open(ctx, path, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in, err := l.AddInput(ctx, ledger.Input{Path: "/in.jsonl", Format: "wildchat"})
	if err != nil {
		t.Fatal(err)
	}
	batch := func(from, n int) ledger.IngestBatch {
		b := ledger.IngestBatch{InputID: in.ID, RecordsDone: int64(from + n)}
		for i := from; i < from+n; i++ {
			b.Kept = append(b.Kept, &conv.Conversation{ID: fmt.Sprintf("c%03d", i), Format: "wildchat", Messages: []conv.Message{{Role: conv.User, Content: "hi"}, {Role: conv.Assistant, Content: "hello"}}})
		}
		return b
	}
	if _, err := l.CommitIngest(ctx, batch(0, 10)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path + "-wal"); err != nil {
		t.Fatal(err)
	}
	_, err = l.CommitIngest(ctx, batch(10, 10))
	var we *ledger.WALRemovedError
	if !errors.As(err, &we) || !errors.Is(err, ledger.ErrWALRemoved) || !we.Saved {
		t.Fatalf("commit after the log was removed: %v", err)
	}
	if _, err := l.CommitIngest(ctx, batch(20, 10)); !errors.Is(err, ledger.ErrWALRemoved) {
		t.Fatalf("a later commit: %v", err)
	}
	// No Close: as after kill -9, only what reached the run file counts.
	// (The test process keeps the connections; a copy shows the file as a
	// new process would find it.)
	cp := filepath.Join(t.TempDir(), "copy.db")
	copyFile(t, path, cp)
	r, err := ledger.Open(ctx, cp, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	n, err := r.CountConversations(ctx)
	r.Close()
	if err != nil || n != 10 {
		t.Fatalf("the run file holds %d conversations (%v), want the 10 committed before the log was removed", n, err)
	}
	l.Close()
	l, err = ledger.Open(ctx, path, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.CommitIngest(ctx, batch(10, 10)); err != nil {
		t.Fatalf("the next writer: %v", err)
	}
}
