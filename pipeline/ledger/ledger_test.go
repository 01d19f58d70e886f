package ledger_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/record"
)

func mustOpen(tb testing.TB) (*ledger.Ledger, string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "run.db")
	l, err := ledger.Open(context.Background(), path, ledger.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return l, path
}

func testConv(id, text string) *conv.Conversation {
	return &conv.Conversation{ID: id, Format: "openai", Messages: []conv.Message{
		{Role: conv.User, Content: text}, {Role: conv.Assistant, Content: "ok"},
	}}
}

func TestReopenAppliesMigrationsOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, path := mustOpen(t)
	if err := l.SetMeta(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l2, err := ledger.Open(ctx, path, ledger.Options{})
	if err != nil {
		t.Fatalf("reopening: %v", err)
	}
	defer l2.Close()
	v, ok, err := l2.Meta(ctx, "k")
	if err != nil || !ok || v != "v" {
		t.Fatalf("meta after reopen = %q %v %v", v, ok, err)
	}
	if _, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "none.db"), ledger.Options{ReadOnly: true}); err == nil {
		t.Fatal("read-only open of a missing run succeeded")
	}
}

func TestCommitIngestDedupesAndCounts(t *testing.T) {
	ctx := context.Background()
	l, _ := mustOpen(t)
	in, err := l.AddInput(ctx, ledger.Input{Path: "/x.jsonl", Format: "openai", Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.CommitIngest(ctx, ledger.IngestBatch{
		InputID: in.ID, RecordsDone: 5, Dedupe: true,
		Kept:  []*conv.Conversation{testConv("a", "hi"), testConv("b", "hi"), testConv("a", "other"), testConv("c", "yo")},
		Drops: map[string]int64{"language": 1},
		Bad:   []record.Bad{{Source: conv.Source{File: "/x.jsonl", Line: 3}, Reason: record.MalformedJSON, Excerpt: "{"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kept != 2 || res.Duplicates != 1 || res.DupIDs != 1 {
		t.Fatalf("result = %+v, want 2 kept, 1 duplicate, 1 duplicate id", res)
	}
	st, err := l.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"language": 1, ledger.DropDuplicate: 1, ledger.DropDuplicateID: 1}
	for k, v := range want {
		if st.Dropped[k] != v {
			t.Errorf("dropped[%s] = %d, want %d", k, st.Dropped[k], v)
		}
	}
	if st.Conversations != 2 || st.QuarantTotal != 1 || st.Quarantined[string(record.MalformedJSON)] != 1 {
		t.Errorf("status = %+v", st)
	}
	got, ok, err := l.Input(ctx, "/x.jsonl")
	if err != nil || !ok || got.RecordsDone != 5 {
		t.Fatalf("input = %+v %v %v", got, ok, err)
	}
	page, err := l.ConversationPage(ctx, 0, 10)
	if err != nil || len(page) != 2 || page[0].Conv.ID != "a" || page[1].Conv.ID != "c" {
		t.Fatalf("page = %+v, %v", page, err)
	}
	if page[0].Conv.Messages[0].Content != "hi" {
		t.Fatalf("conversation did not round-trip: %+v", page[0].Conv)
	}
}

func TestTasksRequeue(t *testing.T) {
	ctx := context.Background()
	l, _ := mustOpen(t)
	in, _ := l.AddInput(ctx, ledger.Input{Path: "/x", Format: "openai"})
	if _, err := l.CommitIngest(ctx, ledger.IngestBatch{InputID: in.ID, Kept: []*conv.Conversation{testConv("a", "1"), testConv("b", "2")}}); err != nil {
		t.Fatal(err)
	}
	v := ledger.Variant{Name: "fc", Version: "v1"}
	if err := l.SetPlan(ctx, "curate", []ledger.Variant{v}); err != nil {
		t.Fatal(err)
	}
	err := l.CommitTasks(ctx, []ledger.TaskResult{
		{TaskID: ledger.TaskID{Stage: "curate", Variant: "fc", Version: "v1", ConvSeq: 1}, ConvID: "a", Status: ledger.Done, Units: []ledger.UnitResult{{Turn: 1, Status: ledger.Done, Output: []byte("x")}}},
		{TaskID: ledger.TaskID{Stage: "curate", Variant: "fc", Version: "v1", ConvSeq: 2}, ConvID: "b", Status: ledger.Failed, Units: []ledger.UnitResult{{Turn: 1, Status: ledger.Failed, Error: "boom", Raw: "raw answer"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := l.Status(ctx)
	if len(st.Stages) != 1 || st.Stages[0].Done != 1 || st.Stages[0].Failed != 1 || st.Stages[0].Pending != 0 || st.Stages[0].UnitsFailed != 1 {
		t.Fatalf("stages = %+v", st.Stages)
	}
	units, err := l.ConversationUnits(ctx, "curate", "b", 1)
	if err != nil || len(units) != 1 || units[0].Raw != "raw answer" || units[0].Key != ledger.UnitKey("curate", "b", 1, "fc", "v1") {
		t.Fatalf("units = %+v %v", units, err)
	}
	n, err := l.Requeue(ctx, "curate")
	if err != nil || n != 1 {
		t.Fatalf("requeue = %d %v", n, err)
	}
	if g, err := l.RetryGeneration(ctx, "curate"); err != nil || g != 1 {
		t.Fatalf("retry generation = %d %v", g, err)
	}
	if g, _ := l.RetryGeneration(ctx, "judge"); g != 0 {
		t.Fatalf("retry generation of another stage = %d", g)
	}
	st, _ = l.Status(ctx)
	if st.Stages[0].Failed != 0 || st.Stages[0].Pending != 1 {
		t.Fatalf("after requeue = %+v", st.Stages)
	}
	// Another version of the same variant counts nothing done.
	d, f, _ := l.TaskCounts(ctx, "curate", ledger.Variant{Name: "fc", Version: "v2"})
	if d != 0 || f != 0 {
		t.Fatalf("v2 counts = %d %d", d, f)
	}
}

func TestUnitKeyIsDeterministicAndDistinct(t *testing.T) {
	a := ledger.UnitKey("s", "c", 1, "v", "x")
	if a != ledger.UnitKey("s", "c", 1, "v", "x") {
		t.Fatal("same inputs gave different keys")
	}
	for _, b := range []string{
		ledger.UnitKey("s", "c", 2, "v", "x"),
		ledger.UnitKey("s", "c1", 1, "v", "x"),
		ledger.UnitKey("sc", "", 1, "v", "x"),
		ledger.UnitKey("s", "c", 1, "v", "y"),
	} {
		if a == b {
			t.Fatal("different inputs gave the same key")
		}
	}
}

func TestLLMCacheAndRecorder(t *testing.T) {
	ctx := context.Background()
	l, path := mustOpen(t)
	c := l.LLMCache()
	if _, ok, err := c.Get(ctx, "k"); ok || err != nil {
		t.Fatalf("empty cache: %v %v", ok, err)
	}
	want := llm.CachedResponse{Content: "<think>x</think>hi", Text: "hi", Reasoning: "x", Model: "m", Usage: llm.Usage{Prompt: 10, Completion: 2}, CostUSD: 0.5}
	if err := c.Put(ctx, "k", want); err != nil {
		t.Fatal(err)
	}
	rec := l.LLMRecorder()
	for _, r := range []llm.CallRecord{
		{Role: "judge", Stage: "judge", Model: "m", Usage: llm.Usage{Prompt: 10, Completion: 2}, CostUSD: 0.5, Status: llm.StatusOK},
		{Role: "judge", Stage: "judge", Model: "m", Status: llm.StatusCached, FromCache: true},
		{Role: "judge", Stage: "judge", Model: "m", Status: llm.StatusFailed, Error: "400"},
	} {
		if err := rec.Record(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	// Both survive reopening the run.
	l2, err := ledger.Open(ctx, path, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	got, ok, err := l2.LLMCache().Get(ctx, "k")
	if err != nil || !ok || got.Text != want.Text || got.Usage != want.Usage || got.Reasoning != "x" {
		t.Fatalf("cached = %+v %v %v", got, ok, err)
	}
	st, err := l2.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.LLM) != 1 || st.LLM[0].Calls != 3 || st.LLM[0].CacheHits != 1 || st.LLM[0].Failed != 1 || st.SpendUSD != 0.5 {
		t.Fatalf("llm status = %+v spend %v", st.LLM, st.SpendUSD)
	}
	if s, _ := l2.SpendUSD(ctx); s != 0.5 {
		t.Fatalf("spend = %v", s)
	}
	// Once summed, the total follows new records without re-reading them.
	if err := l2.LLMRecorder().Record(ctx, llm.CallRecord{Role: "judge", Stage: "judge", Model: "m", CostUSD: 0.25, Status: llm.StatusOK}); err != nil {
		t.Fatal(err)
	}
	if s, _ := l2.SpendUSD(ctx); s != 0.75 {
		t.Fatalf("spend after another call = %v, want 0.75", s)
	}
	if st, _ := l2.Status(ctx); st.SpendUSD != 0.75 {
		t.Fatalf("status spend = %v, want 0.75", st.SpendUSD)
	}
}

// A writer opening a run in a folder that does not exist yet creates it.
func TestOpenCreatesTheRunFolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "folder", "run.db")
	l, err := ledger.Open(context.Background(), path, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
}

// Answers and call rows stored from many goroutines at once are committed
// together (groupCommit) yet each is on disk, and readable, when its call
// returns; the running spend agrees with the rows throughout.
func TestConcurrentAnswersAndCallsAllCommit(t *testing.T) {
	ctx := context.Background()
	l, path := mustOpen(t)
	const workers, each = 32, 40
	errs := make(chan error, workers+1)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				key := fmt.Sprintf("%02d-%03d", w, i)
				if err := l.LLMCache().Put(ctx, key, llm.CachedResponse{Text: key}); err != nil {
					errs <- err
					return
				}
				if got, ok, err := l.LLMCache().Get(ctx, key); err != nil || !ok || got.Text != key {
					errs <- fmt.Errorf("answer %s not readable once Put returned: %v %v", key, ok, err)
					return
				}
				if err := l.LLMRecorder().Record(ctx, llm.CallRecord{Role: "judge", Stage: "judge", Model: "m", CostUSD: 0.25, Status: llm.StatusOK}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	// Spend is read while the rows go in: it only ever grows, in steps of
	// a call's cost.
	wg.Go(func() {
		last := -1.0
		for range 200 {
			s, err := l.SpendUSD(ctx)
			if err != nil {
				errs <- err
				return
			}
			if s < last || s != float64(int(s*4))/4 {
				errs <- fmt.Errorf("spend went from %v to %v", last, s)
				return
			}
			last = s
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if s, err := l.SpendUSD(ctx); err != nil || s != workers*each*0.25 {
		t.Fatalf("spend %v, %v; want %v", s, err, workers*each*0.25)
	}
	l.Close()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var answers, calls int
	var cost float64
	db.QueryRow(`SELECT count(*) FROM llm_cache`).Scan(&answers)
	db.QueryRow(`SELECT count(*), sum(cost_usd) FROM llm_calls`).Scan(&calls, &cost)
	if answers != workers*each || calls != workers*each || cost != workers*each*0.25 {
		t.Fatalf("after reopening: %d answers, %d calls costing %v; want %d each, %v", answers, calls, cost, workers*each, workers*each*0.25)
	}
	// A store on a closed run fails; it does not wait for a commit that
	// cannot come.
	if err := l.LLMCache().Put(ctx, "late", llm.CachedResponse{}); err == nil {
		t.Fatal("storing an answer in a closed run succeeded")
	}
}
