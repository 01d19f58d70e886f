package run_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/synth"
	"github.com/ac3/ac3/run"
)

// BenchmarkEstimate forecasts a whole model-backed plan (classify, curate
// with an AC3 operator, respond, judge) over synthetic WildChat-shaped
// conversations read from a file, as `run --dry-run` does before the run
// exists. It reports the time per conversation.
func BenchmarkEstimate(b *testing.B) {
	dir := b.TempDir()
	in := filepath.Join(dir, "chats.jsonl")
	f, err := os.Create(in)
	if err != nil {
		b.Fatal(err)
	}
	const n = 500
	if _, err := synth.WriteWildChat(f, synth.Options{Seed: 1, Conversations: n, MaxTurns: 6}); err != nil {
		b.Fatal(err)
	}
	f.Close()
	plan := run.Plan{
		DB:       filepath.Join(dir, "run.db"),
		Model:    run.Model{Options: &llm.Options{Endpoints: []llm.Endpoint{{Name: "m", BaseURL: "http://127.0.0.1:1/v1", Model: "m", Price: llm.Price{Input: 0.25, Output: 2}}}}},
		Ingest:   &run.Ingest{Files: []string{in}, Format: "auto", MaxLineBytes: 1 << 24, Filter: run.Filter{MinUserTurns: 2}},
		Annotate: &run.Annotate{Classify: run.LLM},
		Curate:   &run.Curate{Strategies: []string{"fc", "ao", "gated-reset"}},
		Respond:  &run.Respond{Strategies: []string{"fc", "ao", "gated-reset"}},
		Judge:    &run.Judge{Pairs: []string{"gated-reset:ao", "fc:ao"}},
	}
	b.ResetTimer()
	var convs int64
	for b.Loop() {
		fc, err := run.Estimate(context.Background(), plan)
		if err != nil {
			b.Fatal(err)
		}
		convs += fc.Conversations
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(convs)/1e6, "ms/conversation")
}
