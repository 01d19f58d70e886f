package measure_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/compint"
	"github.com/ac3/ac3/stages/compint/compinttest"
	"github.com/ac3/ac3/stages/compint/measure"
	"github.com/ac3/ac3/stages/curate"
)

func synthConv(id string, n int) *conv.Conversation {
	c := &conv.Conversation{ID: id, Format: "synthetic", Source: conv.Source{File: id + ".jsonl", Line: 1}}
	for t := 1; t <= n; t++ {
		c.Messages = append(c.Messages,
			conv.Message{Role: conv.User, Content: fmt.Sprintf("%s question %d about gardens and rivers and the weather in spring", id, t)},
			conv.Message{Role: conv.Assistant, Content: fmt.Sprintf("%s answer %d with a few words on soil, water, light and patience", id, t)})
	}
	return c
}

// TestMeasure derives instances from ingested-like conversations, curates
// their probe turn with fc, ao and lt, scores them against the in-process
// endpoint, and checks every stored number against what the scripted model
// must give: fc and ao keep the SC (it sits in a user turn), lt keeps only
// the probe and loses it.
func TestMeasure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	set, err := compint.Parse("two.json", []byte(compinttest.TwoSCs))
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "run.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.AddDerived(ctx, "seed", func(yield func(int64, *conv.Conversation) bool) {
		for i := range 6 {
			if !yield(0, synthConv(fmt.Sprintf("c%d", i), 3)) {
				return
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	counter, err := tokens.New("")
	if err != nil {
		t.Fatal(err)
	}
	st, err := compint.NewStitcher(counter, compint.StitchOptions{TargetTokens: 150, MaxContexts: 2})
	if err != nil {
		t.Fatal(err)
	}
	bd, err := compint.NewBuilder(counter, set, compint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := pipeline.Derive(ctx, l, measure.Origin, ledger.MustOrigins("seed"), measure.Instances(st, bd), pipeline.DeriveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 2 contexts × 2 SCs × (baseline + top/explicit).
	if sum.Added != 8 {
		t.Fatalf("derived %d instances, want 8", sum.Added)
	}

	var strategies []curate.Strategy
	for _, n := range []string{"fc", "ao", "lt"} {
		s, err := curate.ByName(n, curate.Options{})
		if err != nil {
			t.Fatal(err)
		}
		strategies = append(strategies, s)
	}
	cur := curate.NewStage(strategies, counter, 1).WithLastTurns(1)
	scope := ledger.MustOrigins(measure.Origin)
	if _, err := pipeline.Run(ctx, l, cur, pipeline.Options{Scope: scope}); err != nil {
		t.Fatal(err)
	}
	cv := map[string]string{}
	for _, v := range cur.Variants() {
		cv[v.Name] = v.Version
	}

	srv := llmtest.New(t, llmtest.Options{})
	defer srv.Close()
	srv.Add(llmtest.Rule{Name: "model", Func: compinttest.Model(set)})
	client, err := llm.New(llm.Options{
		Endpoints: []llm.Endpoint{{Name: "local", BaseURL: srv.URL, Model: "test-model", Limits: llm.Limits{Concurrency: 4, RPM: 60000}}},
		Roles:     map[string]llm.RoleBinding{"judge": {Endpoint: "local"}, "respondent": {Endpoint: "local"}},
		Cache:     l.LLMCache(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := measure.New(client, l, measure.Options{Strategies: []string{"fc", "ao", "lt"}, CurateVersions: cv, Set: set, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := pipeline.Run(ctx, l, ms, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rs.Failed != 0 {
		t.Fatalf("%d tasks failed", rs.Failed)
	}
	calls := srv.Count()
	// Per SC instance: long (1) + 3 strategies × (retention + comp + ub) = 10,
	// less fc's compacted question, which is the long one asked again and
	// answered from the cache; per baseline: long (1). 4 + 4 instances, one
	// order each.
	if calls != 4*9+4*1 {
		t.Errorf("%d calls, want 40", calls)
	}
	// The upper bound is the paper's C(H) ⊕ s: the strategy's context of
	// the baseline, which holds no SC, with the SC restated before the
	// question. fc and ao keep the SC's turn, so their upper-bound
	// questions hold the SC exactly once; C(H_s) ⊕ s would hold it twice
	// (injected and restated): 8 questions, 4 SC instances × 2 strategies.
	twice := 0
	for _, c := range srv.Calls() {
		for _, sc := range set.SCs {
			all := ""
			for _, m := range c.Request.Messages {
				all += m.Content + "\n"
			}
			if strings.Contains(c.Request.Last(), sc.Probe) && strings.Count(all, compinttest.Phrases[sc.ID]) > 1 {
				twice++
			}
		}
	}
	if twice != 0 {
		t.Errorf("%d probes hold the SC twice: the upper bound started from the injected context", twice)
	}

	var n int
	z := measure.NewSummarizer(0)
	blindSum := 0.0
	err = l.Units(ctx, measure.StageName, toLedger(ms.Variants()), 0, 1<<62, func(u ledger.Unit) error {
		if u.Status != ledger.Done {
			t.Errorf("%s: %s %s", u.Key, u.Status, u.Error)
			return nil
		}
		z.Add(u)
		o, err := measure.Decode(u.Output)
		if err != nil {
			return err
		}
		n++
		orders, err := compint.Orders(compint.RandomOrder, 7, o.BaseID, o.SCID)
		if err != nil {
			return err
		}
		// What a model that always answers A scores in that order.
		blind := 0.0
		if orders[0] == compint.CompliantFirst {
			blind = 1
		}
		want := map[compint.Group]float64{}
		var retained bool
		if o.Strategy == "" && o.Kind == compint.WithoutSC {
			blindSum += blind
		}
		switch {
		case o.Strategy == "" && o.Kind == compint.WithSC:
			want[compint.LongWithSC] = 1
		case o.Strategy == "":
			want[compint.LongNoSC] = blind
		case o.Strategy == "lt":
			want[compint.Compacted], want[compint.UpperBound] = blind, 1
		default:
			want[compint.Compacted], want[compint.UpperBound], retained = 1, 1, true
		}
		if len(o.Groups) != len(want) {
			t.Errorf("%s %q: groups %+v", o.Instance, o.Strategy, o.Groups)
		}
		for _, g := range o.Groups {
			if w, ok := want[g.Group]; !ok || g.Score != w {
				t.Errorf("%s %q %s: score %v, want %v", o.Instance, o.Strategy, g.Group, g.Score, w)
			}
		}
		if o.Strategy != "" {
			if o.Retention == nil || o.Retention.Retained != retained || o.Retention.Evidence.Exact != retained {
				t.Errorf("%s %s: retention %+v, want %v", o.Instance, o.Strategy, o.Retention, retained)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 4*4+4 {
		t.Errorf("%d units, want 20", n)
	}
	checkSummary(t, z.Summary(), blindSum/4)

	// Nothing is asked twice: running again plans nothing, and a fresh
	// stage over the same run answers from the run's cache.
	if _, err := pipeline.Run(ctx, l, ms, pipeline.Options{}); err != nil {
		t.Fatal(err)
	}
	if srv.Count() != calls {
		t.Errorf("re-running made %d more calls", srv.Count()-calls)
	}
}

func toLedger(vs []pipeline.Variant) []ledger.Variant {
	out := make([]ledger.Variant, len(vs))
	for i, v := range vs {
		out[i] = ledger.Variant(v)
	}
	return out
}

// TestNewRefusesUnknownStrategy: options New cannot honour are refused.
func TestNewRefusesUnknownStrategy(t *testing.T) {
	if _, err := measure.New(nil, nil, measure.Options{Strategies: []string{"fc"}}); err == nil || !strings.Contains(err.Error(), "curate it first") {
		t.Errorf("err = %v", err)
	}
	if _, err := measure.New(nil, nil, measure.Options{UpperBound: "loose"}); err == nil {
		t.Error("an unknown upper bound was accepted")
	}
	if _, err := measure.New(nil, nil, measure.Options{Orders: "sideways"}); err == nil {
		t.Error("an unknown order mode was accepted")
	}
}

// checkSummary checks the folded section against the scripted model: b is
// the no-SC baseline's compliance, the share of instances whose drawn
// order puts the compliant option first (a blind model answers A).
func checkSummary(t *testing.T, s measure.Summary, b float64) {
	t.Helper()
	if s.Instances != 4 || s.Baselines != 4 || s.Failed != 0 || s.Contexts != 2 {
		t.Errorf("counts %d/%d/%d/%d, want 4 instances, 4 baselines, 0 failed, 2 contexts", s.Instances, s.Baselines, s.Failed, s.Contexts)
	}
	type want struct{ retention, comp, effect float64 }
	wants := map[string]want{"ao": {1, 1, 1}, "fc": {1, 1, 1}, "lt": {0, b, 0}}
	seen := map[string]bool{}
	for _, r := range s.Rows {
		if r.Location != measure.All {
			// top × explicit × each SC type: 2 instances each.
			if r.Location != "top" || r.Framing != "explicit" || r.N != 2 {
				t.Errorf("row %+v", r)
			}
			continue
		}
		w, ok := wants[r.Strategy]
		if !ok || seen[r.Strategy] {
			t.Errorf("unexpected row %+v", r)
			continue
		}
		seen[r.Strategy] = true
		if r.N != 4 || r.Retention.Value != w.retention || r.Evidence.Value != w.retention || r.Compacted.Value != w.comp ||
			r.UpperBound.Value != 1 || r.LongWithSC.Value != 1 || r.LongNoSC.Value != b || r.LongNoSC.N != 4 {
			t.Errorf("%s: %+v", r.Strategy, r)
		}
		if b < 1-compint.DefaultMinDenominator {
			if !r.Effect.Defined || math.Abs(r.Effect.Value-w.effect) > 1e-12 {
				t.Errorf("%s: effect retention %+v, want %v", r.Strategy, r.Effect, w.effect)
			}
		} else if r.Effect.Defined {
			t.Errorf("%s: effect retention defined over a denominator of %v", r.Strategy, r.Effect.Denominator)
		}
	}
	if len(seen) != 3 {
		t.Errorf("pooled rows for %v", seen)
	}
	// ao–fc agree everywhere; both keep all 4 SCs lt loses.
	for _, p := range s.Pairs {
		wantA, wantP := 0, 1.0
		if p.B == "lt" && p.Measure == "retention" {
			wantA, wantP = 4, 0.125
		}
		if p.Measure == "compliance" && p.B == "lt" {
			wantA = int(math.Round(4 * (1 - b)))
			wantP = stats.McNemarExact(wantA, 0)
		}
		if p.N != 4 || p.AOnly != wantA || p.BOnly != 0 || p.P != wantP {
			t.Errorf("pair %+v, want %d discordant, p %v", p, wantA, wantP)
		}
	}
	if len(s.Pairs) != 6 {
		t.Errorf("%d pair tests, want 3 pairs × 2 measures", len(s.Pairs))
	}
}
