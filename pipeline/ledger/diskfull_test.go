package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
)

// fillDisk leaves the run room for only a couple more pages.
func fillDisk(t *testing.T, ctx context.Context, l *ledger.Ledger) {
	t.Helper()
	n, err := ledger.PageCount(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.SetMaxPageCount(ctx, l, n+2); err != nil {
		t.Fatal(err)
	}
}

func freeDisk(t *testing.T, ctx context.Context, l *ledger.Ledger) {
	t.Helper()
	if _, err := ledger.SetMaxPageCount(ctx, l, 1<<30); err != nil {
		t.Fatal(err)
	}
}

func bigTasks(from, to int64, variant string) []ledger.TaskResult {
	var out []ledger.TaskResult
	for seq := from; seq <= to; seq++ {
		out = append(out, ledger.TaskResult{
			TaskID: ledger.TaskID{Stage: "curate", Variant: variant, Version: "v1", ConvSeq: seq},
			ConvID: fmt.Sprintf("c%05d", seq-1), Status: ledger.Done, Attempts: 1,
			Units: []ledger.UnitResult{{Turn: 1, Status: ledger.Done, Attempts: 1, Output: []byte(strings.Repeat(fmt.Sprintf("output %d ", seq), 800))}},
		})
	}
	return out
}

func wantDiskFull(t *testing.T, what string, err error, path string) {
	t.Helper()
	var fe *ledger.DiskFullError
	if !errors.Is(err, ledger.ErrDiskFull) || !errors.As(err, &fe) || fe.Path != path {
		t.Fatalf("%s on a full disk: %v; want a DiskFullError for %s", what, err, path)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "disk full") || !strings.Contains(msg, "run the same command again") {
		t.Fatalf("%s: message %q should be one line saying the disk is full and how to go on", what, msg)
	}
}

func TestDiskFullDuringCommitThenResume(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, path := mustOpen(t)
	if err := ingestN(ctx, l, "/x.jsonl", 40); err != nil {
		t.Fatal(err)
	}
	if err := l.CommitTasks(ctx, bigTasks(1, 10, "fc")); err != nil {
		t.Fatal(err)
	}

	fillDisk(t, ctx, l)
	wantDiskFull(t, "committing tasks", l.CommitTasks(ctx, bigTasks(11, 40, "fc")), path)
	in2, err := l.AddInput(ctx, ledger.Input{Path: "/y.jsonl", Format: "openai"})
	if err != nil {
		t.Fatal(err) // a small row still fits
	}
	var kept []*conv.Conversation
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 30 {
		var q strings.Builder
		for range 2000 {
			fmt.Fprintf(&q, "%x ", rng.Uint32()) // does not compress
		}
		kept = append(kept, testConv(fmt.Sprintf("y%03d", i), q.String()))
	}
	_, err = l.CommitIngest(ctx, ledger.IngestBatch{InputID: in2.ID, RecordsDone: 30, Finished: true, Kept: kept})
	wantDiskFull(t, "committing an ingest batch", err, path)
	err = l.LLMCache().Put(ctx, "k", llm.CachedResponse{Text: strings.Repeat("answer ", 3000)})
	wantDiskFull(t, "caching an answer", err, path)

	// Nothing of the failed commits was kept: the batch is all or nothing.
	if d, f, err := l.TaskCounts(ctx, "curate", ledger.Variant{Name: "fc", Version: "v1"}); err != nil || d != 10 || f != 0 {
		t.Fatalf("tasks after the failed commit = %d done %d failed, %v; want the 10 from before", d, f, err)
	}
	if in, _, err := l.Input(ctx, "/y.jsonl"); err != nil || in.RecordsDone != 0 {
		t.Fatalf("input position after the failed ingest = %+v, %v; want 0", in, err)
	}
	if n, _ := l.CountConversations(ctx); n != 40 {
		t.Fatalf("conversations = %d, want 40", n)
	}
	if _, err := os.Stat(path + ledger.DamageSuffix); err == nil {
		t.Fatal("a full disk left a damage note")
	}

	// Space is freed: the same commits go through on the same open run.
	freeDisk(t, ctx, l)
	if err := l.CommitTasks(ctx, bigTasks(11, 40, "fc")); err != nil {
		t.Fatalf("committing after space was freed: %v", err)
	}
	if _, err := l.CommitIngest(ctx, ledger.IngestBatch{InputID: in2.ID, RecordsDone: 30, Finished: true, Kept: kept}); err != nil {
		t.Fatalf("ingesting after space was freed: %v", err)
	}
	if d, _, _ := l.TaskCounts(ctx, "curate", ledger.Variant{Name: "fc", Version: "v1"}); d != 40 {
		t.Fatalf("tasks done = %d, want 40", d)
	}
	if n, _ := l.CountConversations(ctx); n != 70 {
		t.Fatalf("conversations = %d, want 70", n)
	}
}

// bigStage is a model-free stage whose units are large, so a few commits
// fill a small "disk".
type bigStage struct{}

func (bigStage) Name() string { return "curate" }
func (bigStage) Variants() []pipeline.Variant {
	return []pipeline.Variant{{Name: "fc", Version: "v1"}}
}
func (bigStage) Process(_ context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	out := []byte(strings.Repeat("curated "+t.Conv.ID+" ", 500))
	return []pipeline.Result{{Variant: t.Variants[0], Units: []pipeline.Unit{{Turn: 1, Output: out, Tokens: 1}}}}, nil
}

// The engine stops on a full disk with the typed error, and a second run
// after space is freed does exactly the work the first did not commit.
func TestDiskFullStopsTheEngineAndResumes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, path := mustOpen(t)
	if err := ingestN(ctx, l, "/x.jsonl", 300); err != nil {
		t.Fatal(err)
	}
	n, err := ledger.PageCount(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.SetMaxPageCount(ctx, l, n+60); err != nil { // room for some of the work
		t.Fatal(err)
	}
	first, err := pipeline.Run(ctx, l, bigStage{}, pipeline.Options{Workers: 2, BatchSize: 16})
	wantDiskFull(t, "running a stage", err, path)
	if first.Done == 0 || first.Done >= 300 {
		t.Fatalf("first run committed %d tasks; want some but not all", first.Done)
	}
	freeDisk(t, ctx, l)
	second, err := pipeline.Run(ctx, l, bigStage{}, pipeline.Options{Workers: 2, BatchSize: 16})
	if err != nil {
		t.Fatalf("run after space was freed: %v", err)
	}
	if first.Done+second.Done != 300 || second.Previous != first.Done {
		t.Fatalf("first run %d + second run %d tasks (second saw %d recorded); want 300 in all, none twice", first.Done, second.Done, second.Previous)
	}
	st, err := l.StageProgress(ctx, "curate", ledger.Variant{Name: "fc", Version: "v1"})
	if err != nil || st.Done != 300 || st.UnitsDone != 300 || st.Pending != 0 {
		t.Fatalf("progress = %+v, %v", st, err)
	}
}
