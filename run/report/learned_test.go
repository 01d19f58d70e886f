package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ac3/ac3/run/report"
	"github.com/ac3/ac3/stages/curate/memory"
	"github.com/ac3/ac3/stages/curate/policy"
)

// metaRun is fixedRun with run settings.
type metaRun struct {
	*fakeRun
	meta map[string]string
}

func (m metaRun) Meta(_ context.Context, key string) (string, bool, error) {
	v, ok := m.meta[key]
	return v, ok, nil
}

// The report leaves the memory's learning split out and says so, and shows
// the fitted adaptive policy's held-out figures.
func TestReportLeavesTheLearningSplitOutAndShowsThePolicy(t *testing.T) {
	ctx := context.Background()
	full, err := report.Build(ctx, fixedRun(t), report.Options{Seed: 1, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	split, _ := json.Marshal(memory.Split{Conversations: 2, LastSeq: 2, Hash: "abc123", Excluded: true})
	pol := policy.Policy{Features: policy.FeatureNames(), Weights: make([]float64, 10), Mean: make([]float64, 9), Scale: make([]float64, 9), N: 40,
		FCWinRate: 0.45, TrainAccuracy: 0.8, Fit: &policy.FitReport{Method: "l1-logistic", Ties: "losses", Classes: "balanced", Metric: "f1", Folds: 5, FoldsBy: "conversation",
			Lambda: 0.0123, C: 2.03, NonZero: 3, Wins: 18, Losses: 20, TiesN: 2, Majority: 0.55, Tau: 0.47, TauAccuracy: 0.7}}
	pol.Fit.HeldOut.Accuracy, pol.Fit.HeldOut.SD, pol.Fit.HeldOut.F1 = 0.7, 0.05, 0.66
	pb, _ := json.Marshal(pol)
	src := metaRun{fixedRun(t), map[string]string{memory.MetaSplit: string(split), policy.MetaKey: string(pb)}}
	r, err := report.Build(ctx, src, report.Options{Seed: 1, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	if r.MemorySplit == nil || r.Conversations != full.Conversations-2 || r.MemorySplit.Evaluated != r.Conversations {
		t.Fatalf("split %+v, conversations %d (all %d)", r.MemorySplit, r.Conversations, full.Conversations)
	}
	for i, p := range r.Pairs {
		got, all := p.Dimensions[0].Overall, full.Pairs[i].Dimensions[0].Overall
		if got.Conversations != all.Conversations-2 || got.N >= all.N {
			t.Errorf("%s: %d conversations and n %d, all %d and %d: the learning two are not left out", p.Pair, got.Conversations, got.N, all.Conversations, all.N)
		}
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "left out of this report, which covers the other 2") {
		t.Errorf("notes %q", r.Notes)
	}
	if p := r.Policy; p == nil || p.Lambda != 0.0123 || p.HeldOutAcc != 0.7 || p.Tau != 0.47 || p.Turns != 40 {
		t.Fatalf("policy %+v", r.Policy)
	}
	var md, html bytes.Buffer
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Adaptive policy", "λ = 0.0123 (C = 2.03)", "accuracy 70.0% ± 5.0% (always the commoner label: 55.0%)", "τ = 0.470", "left out of this report"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if !strings.Contains(html.String(), `<h2 id="adaptive-policy">Adaptive policy</h2>`) {
		t.Error("report.html has no policy section")
	}

	// Forced in: every conversation counts, and the note says it flatters.
	split, _ = json.Marshal(memory.Split{Conversations: 2, LastSeq: 2, Hash: "abc123"})
	src.meta[memory.MetaSplit] = string(split)
	if r, err = report.Build(ctx, src, report.Options{Seed: 1, Resamples: 200}); err != nil {
		t.Fatal(err)
	}
	if r.Conversations != full.Conversations || !strings.Contains(strings.Join(r.Notes, "\n"), "flatter the memory") {
		t.Errorf("included split: %d conversations, notes %q", r.Conversations, r.Notes)
	}
}
