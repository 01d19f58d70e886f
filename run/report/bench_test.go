package report_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/run/report"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/respond"
)

// benchRun writes a run of n synthetic conversations to a ledger in dir:
// 2–7 user turns each (from a fixed PCG), classify labels, three curate
// strategies, two respond variants and one pair judged in both orders on
// every turn from round 2, the shape of a real run's units. Nothing here is
// real data.
func benchRun(b *testing.B, dir string, n int) string {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(dir, fmt.Sprintf("run-%d.db", n))
	l, err := ledger.Open(ctx, path, ledger.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	in, err := l.AddInput(ctx, ledger.Input{Path: "synthetic", Format: "wildchat"})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(uint64(n), 11))
	plans := map[string][]ledger.Variant{
		"classify":        {{Name: "llm", Version: "v1"}},
		curate.StageName:  {{Name: "fc", Version: "v1"}, {Name: "ao", Version: "v1"}, {Name: "gated-reset", Version: "v1"}},
		respond.StageName: {{Name: "fc", Version: "v1"}, {Name: "ao", Version: "v1"}},
		judge.StageName:   {{Name: "fc:ao", Version: "v1"}},
	}
	for stage, vs := range plans {
		if err := l.SetPlan(ctx, stage, vs); err != nil {
			b.Fatal(err)
		}
	}
	enc := func(v any) []byte {
		out, err := json.Marshal(v)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	oc := []string{"A", "B", "tie"}
	const batch = 500
	for start := 0; start < n; start += batch {
		var kept []*conv.Conversation
		turns := map[string]int{}
		for i := start; i < min(start+batch, n); i++ {
			c := &conv.Conversation{ID: fmt.Sprintf("%016x", r.Uint64()), Format: "wildchat", Language: "English"}
			t := 2 + r.IntN(6)
			for k := range t {
				c.Messages = append(c.Messages, conv.Message{Role: conv.User, Content: fmt.Sprintf("question %d", k)}, conv.Message{Role: conv.Assistant, Content: "answer"})
			}
			turns[c.ID] = t
			kept = append(kept, c)
		}
		if _, err := l.CommitIngest(ctx, ledger.IngestBatch{InputID: in.ID, RecordsDone: int64(start + len(kept)), Finished: start+batch >= n, Kept: kept}); err != nil {
			b.Fatal(err)
		}
		var tasks []ledger.TaskResult
		for i, c := range kept {
			seq := int64(start + i + 1)
			task := func(stage, variant string, unit func(turn int) []byte) {
				tr := ledger.TaskResult{TaskID: ledger.TaskID{Stage: stage, Variant: variant, Version: "v1", ConvSeq: seq}, ConvID: c.ID, Status: ledger.Done, Attempts: 1}
				for turn := 2; turn <= turns[c.ID]; turn++ {
					tr.Units = append(tr.Units, ledger.UnitResult{Turn: turn, Status: ledger.Done, Attempts: 1, Output: unit(turn)})
				}
				tasks = append(tasks, tr)
			}
			task("classify", "llm", func(int) []byte {
				return enc(map[string]any{"type": []string{"new_ask", "feedback", "no_feedback"}[r.IntN(3)], "refs": []string{}, "annotator": "llm:m"})
			})
			for _, s := range []string{"fc", "ao", "gated-reset"} {
				task(curate.StageName, s, func(turn int) []byte {
					ctx := curated.Context{Strategy: s, Turn: turn, Tokens: 100 + r.IntN(3000), Parts: []curated.Part{curated.MessagePart(0)}}
					if s == "gated-reset" {
						ctx.Info = curated.Info{Operator: curated.OpGatedReset, Action: curated.ActionPass, Analyzed: true, GateOpen: r.IntN(3) == 0}
					}
					out, err := curated.EncodeContext(ctx)
					if err != nil {
						b.Fatal(err)
					}
					return out
				})
			}
			for _, s := range []string{"fc", "ao"} {
				task(respond.StageName, s, func(int) []byte {
					return enc(respond.Output{Strategy: s, Model: "m", Endpoint: "e", ContextTokens: 500, Samples: []respond.Sample{{Text: "answer", CompletionTokens: 200}}})
				})
			}
			task(judge.StageName, "fc:ao", func(int) []byte {
				cmp := judge.Comparison{Outcome: map[string]string{}, Consistent: map[string]bool{},
					Calls: []judge.Call{{First: "A", Model: "j", Endpoint: "e", Verdicts: map[string]judge.DimVerdict{}}, {First: "B", Model: "j", Endpoint: "e", Verdicts: map[string]judge.DimVerdict{}}}}
				for _, d := range judge.Dimensions() {
					a, bb := oc[r.IntN(3)], oc[r.IntN(3)]
					cmp.Calls[0].Verdicts[d], cmp.Calls[1].Verdicts[d] = judge.DimVerdict{Outcome: a}, judge.DimVerdict{Outcome: bb}
					cmp.Outcome[d], cmp.Consistent[d] = "tie", a == bb
					if a == bb {
						cmp.Outcome[d] = a
					}
				}
				return enc(judge.Output{Pair: "fc:ao", A: "fc", B: "ao", Context: "full", Order: judge.OrderBoth, Prompt: "p@v1", Comparisons: []judge.Comparison{cmp}})
			})
		}
		if err := l.CommitTasks(ctx, tasks); err != nil {
			b.Fatal(err)
		}
	}
	return path
}

// heapMeter samples the live heap after a forced collection at the start
// of every page the report reads: the fold's state between pages, which is
// what grows with the run. Sampling at pages, not on a clock, makes the
// figure the same from run to run.
type heapMeter struct {
	report.Source
	peak uint64
}

func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func (m *heapMeter) EachPage(ctx context.Context, size int, fn func([]ledger.Stored, int64, int64) error) error {
	return m.Source.EachPage(ctx, size, func(page []ledger.Stored, after, upto int64) error {
		m.peak = max(m.peak, liveHeap())
		err := fn(page, after, upto)
		m.peak = max(m.peak, liveHeap())
		return err
	})
}

// BenchmarkReportMemory builds the report of synthetic runs of 2,000 and
// 20,000 conversations and prints how far the live heap rose above where
// it stood before Build, at its highest page boundary. Flat memory means
// the growth per conversation is the few bytes the bootstrap records take
// (see the package documentation), not the units' size.
//
//	go test -run '^$' -bench ReportMemory -benchtime 1x ./run/report/
func BenchmarkReportMemory(b *testing.B) {
	dir := b.TempDir()
	sizes := []int{2000, 20000}
	growth := map[int]float64{}
	for _, n := range sizes {
		path := benchRun(b, dir, n)
		b.Run(fmt.Sprintf("convs=%d", n), func(b *testing.B) {
			ctx := context.Background()
			l, err := ledger.Open(ctx, path, ledger.Options{ReadOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			var rep *report.Report
			for b.Loop() {
				m := &heapMeter{Source: l}
				base := liveHeap()
				if rep, err = report.Build(ctx, m, report.Options{Seed: 1, Resamples: 200}); err != nil {
					b.Fatal(err)
				}
				growth[n] = float64(m.peak) - float64(base)
			}
			if rep.Pairs[0].Dimensions[0].Overall.Conversations != n {
				b.Fatalf("%d conversations judged, want %d", rep.Pairs[0].Dimensions[0].Overall.Conversations, n)
			}
			b.ReportMetric(growth[n], "peak-heap-growth-B")
			b.ReportMetric(growth[n]/float64(n), "B/conv")
		})
	}
	if g2, g20 := growth[2000], growth[20000]; g2 > 0 {
		fmt.Printf("report.Build live heap growth: %.0f B at 2k, %.0f B at 20k conversations (×%.2f for ×10); %.1f B per added conversation\n",
			g2, g20, g20/g2, (g20-g2)/18000)
	}
}
