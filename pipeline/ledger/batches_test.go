package ledger_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
)

func TestSalvageKeepsBatches(t *testing.T) {
	ctx := context.Background()
	l, src := mustOpen(t)
	q := l.BatchQueue()
	for _, k := range []string{"k1", "k2"} {
		if d, err := q.Defer(ctx, llm.DeferredRequest{Key: k, Endpoint: "e", Role: "judge", Stage: "judge", Body: []byte(`{"model":"m"}`)}); err != nil || d != llm.Deferred {
			t.Fatalf("Defer %s: %v %v", k, d, err)
		}
	}
	if d, _ := q.Defer(ctx, llm.DeferredRequest{Key: "k1", Endpoint: "e", Body: []byte(`{}`)}); d != llm.Waiting {
		t.Fatalf("second Defer: %v, want Waiting", d)
	}
	b, ok, err := l.NewBatch(ctx, "e", 1, 1<<20, "resubmit", func(string, int) int64 { return 1 })
	if err != nil || !ok || b.Requests != 1 {
		t.Fatalf("NewBatch: %+v %v %v", b, ok, err)
	}
	b.State, b.RemoteID, b.InputFile = ledger.BatchSubmitted, "batch-1", "file-1"
	if err := l.UpdateBatch(ctx, b); err != nil {
		t.Fatal(err)
	}
	l.Close()
	dst := filepath.Join(t.TempDir(), "salvaged.db")
	if _, err := ledger.Salvage(ctx, src, dst); err != nil {
		t.Fatal(err)
	}
	l2, err := ledger.Open(ctx, dst, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	live, err := l2.Batches(ctx, true)
	if err != nil || len(live) != 1 || live[0].RemoteID != "batch-1" || live[0].State != ledger.BatchSubmitted {
		t.Fatalf("batches after salvage: %+v %v", live, err)
	}
	counts, _ := l2.BatchRequestCounts(ctx)
	if counts[ledger.ReqSubmitted] != 1 || counts[ledger.ReqQueued] != 1 {
		t.Fatalf("requests after salvage: %v", counts)
	}
}
