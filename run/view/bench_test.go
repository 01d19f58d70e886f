package view

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/synth"
	"github.com/ac3/ac3/run"
)

// benchRun builds (once; it is kept in the temporary folder across runs
// of the benchmark) a run of n synthetic WildChat conversations, ingested
// and classified by the heuristic labeller, and returns its path.
func benchRun(b *testing.B, n int) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("ac3-view-bench-%d", n))
	db := filepath.Join(dir, "run.db")
	done := filepath.Join(dir, "complete")
	if _, err := os.Stat(done); err == nil {
		return db
	}
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	in := filepath.Join(dir, "chats.jsonl")
	f, err := os.Create(in)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := synth.WriteWildChat(f, synth.Options{Seed: 32, Conversations: n, MaxTurns: 8}); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	plan := run.Plan{
		DB:       db,
		Ingest:   &run.Ingest{Files: []string{in}, Format: "auto", MaxLineBytes: 1 << 24},
		Annotate: &run.Annotate{Classify: run.Heuristic},
	}
	if _, err := run.Execute(context.Background(), plan, run.Options{}); err != nil {
		b.Fatal(err)
	}
	os.Remove(in)
	b.Logf("built a run of %d conversations in %s", n, time.Since(start).Round(time.Second))
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkFirstPage measures how long the first page of the conversation
// list takes on a run of AC3_VIEW_BENCH_N conversations (default 100,000),
// unfiltered and with the filters a person starts with, through the whole
// HTTP handler. The bound is 300 ms at a million.
//
//	go test -run '^$' -bench FirstPage -benchtime 20x ./run/view
func BenchmarkFirstPage(b *testing.B) {
	n := 100_000
	if s := os.Getenv("AC3_VIEW_BENCH_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	db := benchRun(b, n)
	l, err := ledger.Open(context.Background(), db, ledger.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	h, err := New(l)
	if err != nil {
		b.Fatal(err)
	}
	for _, q := range []string{
		"/conversations",
		"/conversations?lang=English&turns_min=4",
		"/conversations?type=feedback&lang=Chinese",
		"/conversations?type=no_feedback&turns=8&lang=French",
		"/conversations?q=integral",
		"/conversations?failed=any",
		"/conversations?after=" + strconv.Itoa(n-200),
		"/",
	} {
		b.Run(q, func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var worst time.Duration
			for b.Loop() {
				start := time.Now()
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, q, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", q, rec.Code, rec.Body.String())
				}
				worst = max(worst, time.Since(start))
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/page")
			b.ReportMetric(float64(worst.Microseconds())/1000, "ms-worst")
			b.ReportMetric(float64(after.HeapInuse)/(1<<20), "MiB-heap")
		})
	}
}
